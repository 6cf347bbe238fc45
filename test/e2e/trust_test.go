package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// jobSpec is a Job for the tests of quota a job owner must not escape.
type jobSpec struct {
	name, queue, priorityClass string
	completions, parallelism   int
	gpus                       int
	// runFor is how long each pod runs; "" until deleted.
	runFor string
	// stopFor is how long a deleted pod takes to stop, keeping its node.
	stopFor string
	// jobAnnotations are added to the Job's own annotations.
	jobAnnotations map[string]string
}

func (e *env) jobYAML(j jobSpec) string {
	labels := "berth.dev/queue-name: " + j.queue
	if j.priorityClass != "" {
		labels += ", berth.dev/priority-class: " + j.priorityClass
	}
	var podAnnotations []string
	if j.runFor != "" {
		podAnnotations = append(podAnnotations, fmt.Sprintf("pod-complete.stage.kwok.x-k8s.io/delay: %q", j.runFor))
	}
	if j.stopFor != "" {
		podAnnotations = append(podAnnotations, fmt.Sprintf("pod-delete.stage.kwok.x-k8s.io/delay: %q", j.stopFor))
	}
	var jobAnnotations []string
	for k, v := range j.jobAnnotations {
		jobAnnotations = append(jobAnnotations, fmt.Sprintf("%s: %q", k, v))
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s, namespace: %s, labels: {%s}, annotations: {%s}}
spec:
  completions: %d
  parallelism: %d
  template:
    metadata: {annotations: {%s}}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 30
      containers:
      - name: main
        image: registry.example/e2e:latest
        resources:
          requests: {cpu: "1", nvidia.com/gpu: "%d"}
          limits: {nvidia.com/gpu: "%d"}
`, j.name, e.ns, labels, strings.Join(jobAnnotations, ", "), j.completions, j.parallelism, strings.Join(podAnnotations, ", "), j.gpus, j.gpus)
}

// submit creates the Job.
func (e *env) submit(j jobSpec) {
	e.t.Helper()
	apply(e.t, e.jobYAML(j))
}

// refused runs kubectl and requires the API server to refuse it with a
// message that contains every part.
func (e *env) refused(parts []string, args ...string) {
	e.t.Helper()
	out, err := kubectl(e.t.Context(), "", args...)
	if err == nil {
		e.t.Fatalf("kubectl %s was allowed (%s), want a refusal naming %v", strings.Join(args, " "), out, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			e.t.Errorf("kubectl %s: %v; want it to say %q", strings.Join(args, " "), err, p)
		}
	}
}

// running waits until n pods of the job run on nodes.
func (e *env) running(job string, n int) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("%d pods of %s running", n, job), 90*time.Second, func(ctx context.Context) error {
		out := get(ctx, "pods", "-n", e.ns, "-l", "job-name="+job, "--field-selector=status.phase=Running", "-o", "name")
		if got := len(strings.Fields(out)); got != n {
			return fmt.Errorf("%d running", got)
		}
		return nil
	})
}

// A Job's pod requests raised while it waits: its Workload is replaced by
// one that asks for them, at the back of the queue, so the jobs behind it
// are not pushed over the quota (item 1).
func TestRequestsRaisedWhileWaiting(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("raised", "  queueingStrategy: StrictFIFO\n", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.sampleGPUs(8)
	e.submit(jobSpec{name: "first", queue: "main", completions: 1, parallelism: 1, gpus: 8})
	e.running("first", 1)
	e.submit(jobSpec{name: "raised", queue: "main", completions: 1, parallelism: 1, gpus: 4, runFor: "10s"})
	e.waitPending("raised")
	e.submit(jobSpec{name: "behind", queue: "main", completions: 1, parallelism: 1, gpus: 4, runFor: "10s"})
	e.waitPending("behind")

	old := e.workload(t.Context(), "raised")
	if _, err := kubectl(t.Context(), "", "patch", "job", "raised", "-n", e.ns, "--type=json", "-p",
		`[{"op":"replace","path":"/spec/template/spec/containers/0/resources/requests/nvidia.com~1gpu","value":"8"},`+
			`{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"8"}]`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the raised job's Workload to ask for 8 GPUs", time.Minute, func(ctx context.Context) error {
		wl := e.workload(ctx, "raised")
		got := get(ctx, "wl", wl, "-n", e.ns, "-o", `jsonpath={.spec.podSets[0].template.spec.containers[0].resources.requests.nvidia\.com/gpu}`)
		if got != "8" {
			return fmt.Errorf("Workload %s asks for %q GPUs per pod (was %s)", wl, got, old)
		}
		return nil
	})
	if events := get(t.Context(), "events", "-n", e.ns, "--field-selector", "reason=ReplacedWorkload", "-o", "jsonpath={.items[*].message}"); !strings.Contains(events, "nvidia.com/gpu per pod 8 instead of 4") {
		t.Errorf("ReplacedWorkload events %q, want the change named", events)
	}
	// The job behind now goes first: 4 of 8 GPUs, while raised waits.
	if _, err := kubectl(t.Context(), "", "delete", "job", "first", "-n", e.ns); err != nil {
		t.Fatal(err)
	}
	e.waitCondition("behind", "Admitted", "True", "")
	e.waitCondition("raised", "Admitted", "True", "")
}

// A running Job's parallelism cannot be raised past its admission (item 2).
func TestParallelismRaisedWhileRunning(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("scaled", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.sampleGPUs(8)
	e.submit(jobSpec{name: "scaled", queue: "main", completions: 4, parallelism: 1, gpus: 4, runFor: "20s"})
	e.running("scaled", 1)
	e.refused([]string{"spec.parallelism", "cannot change from 1 to 4 pods while the job holds quota"},
		"patch", "job", "scaled", "-n", e.ns, "--type=merge", "-p", `{"spec":{"parallelism":4}}`)
	time.Sleep(3 * time.Second)
	if n := len(strings.Fields(get(t.Context(), "pods", "-n", e.ns, "-l", "job-name=scaled", "-o", "name"))); n != 1 {
		t.Errorf("%d pods of the job exist, want 1", n)
	}
}

// The queue label of a job that holds quota cannot be removed, and when
// the job ends its quota is released (item 3).
func TestQueueLabelKeptWhileHoldingQuota(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("label", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.sampleGPUs(8)
	e.submit(jobSpec{name: "holder", queue: "main", completions: 1, parallelism: 1, gpus: 8, runFor: "10s"})
	e.running("holder", 1)
	e.refused([]string{"metadata.labels[berth.dev/queue-name]", "holds quota"}, "label", "job", "holder", "-n", e.ns, "berth.dev/queue-name-")
	e.refused([]string{"metadata.labels[berth.dev/queue-name]"}, "label", "job", "holder", "-n", e.ns, "--overwrite", "berth.dev/queue-name=elsewhere")
	e.submit(jobSpec{name: "next", queue: "main", completions: 1, parallelism: 1, gpus: 8, runFor: "5s"})
	e.waitCondition("holder", "Finished", "True", "Succeeded")
	e.waitCondition("next", "Admitted", "True", "")
}

// A user cannot start a job Berth has not admitted (a rule of the
// contract).
func TestUnadmittedJobCannotBeStarted(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("start", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.sampleGPUs(8)
	e.submit(jobSpec{name: "big", queue: "main", completions: 1, parallelism: 1, gpus: 8, runFor: "30s"})
	e.running("big", 1)
	e.submit(jobSpec{name: "eager", queue: "main", completions: 1, parallelism: 1, gpus: 8})
	e.waitPending("eager", "needs 8 nvidia.com/gpu")
	e.refused([]string{"spec.suspend", "is not admitted", "needs 8 nvidia.com/gpu"},
		"patch", "job", "eager", "-n", e.ns, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
}

// Input that cannot become a Workload is refused with the field named
// (item 4).
func TestBadInputIsRefused(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("bad", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	_, err := kubectl(t.Context(), e.jobYAML(jobSpec{name: "bad", queue: "main", completions: 2, parallelism: 2, gpus: 1,
		jobAnnotations: map[string]string{"berth.dev/job-min-parallelism": "abc"}}), "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `metadata.annotations[berth.dev/job-min-parallelism]: Invalid value: "abc"`) {
		t.Errorf("creating a job with min-parallelism abc: %v; want a refusal naming the annotation", err)
	}
	huge := strings.Replace(e.jobYAML(jobSpec{name: "huge", queue: "main", completions: 4, parallelism: 4, gpus: 1}),
		`requests: {cpu: "1",`, `requests: {memory: "4Ei", cpu: "1",`, 1)
	if _, err := kubectl(t.Context(), huge, "apply", "-f", "-"); err == nil || !strings.Contains(err.Error(), "would request more memory than Berth can count") {
		t.Errorf("creating a job of 16Ei of memory: %v; want a refusal naming the requests", err)
	}
}

// Cohorts whose parentName links form a cycle make their ClusterQueues
// inactive, with the cycle named (item 4).
func TestCohortCycleIsNamed(t *testing.T) {
	e := newEnv(t)
	a, b, c := e.name("a"), e.name("b"), e.name("c")
	for _, link := range [][2]string{{a, b}, {b, c}, {c, a}} {
		e.clusterScoped("cohort", link[0], fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: Cohort\nmetadata: {name: %s}\nspec: {parentName: %s}\n", link[0], link[1]))
	}
	cq := e.queue("looped", "  cohortName: "+a+"\n", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	cycle := fmt.Sprintf("%s -> %s -> %s -> %s", a, b, c, a)
	eventually(t, "the ClusterQueue to name the cycle", time.Minute, func(ctx context.Context) error {
		got := get(ctx, "cq", cq, "-o", `jsonpath={.status.conditions[?(@.type=="Active")].reason}: {.status.conditions[?(@.type=="Active")].message}`)
		if !strings.HasPrefix(got, "CohortCycle: ") || !strings.Contains(got, cycle) {
			return fmt.Errorf("Active is %q, want reason CohortCycle and %s", got, cycle)
		}
		return nil
	})
	// Breaking the cycle makes it active again.
	apply(t, fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: Cohort\nmetadata: {name: %s}\nspec: {}\n", c))
	eventually(t, "the ClusterQueue to be active once the cycle is broken", time.Minute, func(ctx context.Context) error {
		if got := get(ctx, "cq", cq, "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`); got != "True" {
			return fmt.Errorf("Active is %q", got)
		}
		return nil
	})
}

// A preempted job's quota goes to the preemptor only once its pods have
// stopped, however long they take (item 5).
func TestQuotaReleasedWhenPodsHaveStopped(t *testing.T) {
	e := newEnv(t)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	cq := e.queue("release", "  preemption: {withinClusterQueue: LowerPriority}\n", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	sampler := e.sampleGPUs(8)
	e.submit(jobSpec{name: "victim", queue: "main", priorityClass: low, completions: 2, parallelism: 2, gpus: 4, stopFor: "8s"})
	e.running("victim", 2)
	start := time.Now()
	e.submit(jobSpec{name: "preemptor", queue: "main", priorityClass: high, completions: 2, parallelism: 2, gpus: 4, runFor: "5s"})
	e.waitCondition("victim", "Preempted", "True", "InClusterQueue")
	// While the victim's pods stop, a pod made with their labels, as the
	// Job's controller would make one before it has seen the Job
	// suspended, is refused.
	wl := get(t.Context(), "pods", "-n", e.ns, "-l", "job-name=victim", "-o", `jsonpath={.items[0].metadata.labels.berth\.dev/workload}`)
	e.refused([]string{"metadata.labels[berth.dev/workload]", "workload " + wl + " is", "only while it is admitted"},
		"run", "late", "-n", e.ns, "--image=registry.example/e2e:latest", "--restart=Never", "--labels=berth.dev/managed=true,berth.dev/workload="+wl)
	e.running("preemptor", 2)
	if waited := time.Since(start); waited < 8*time.Second {
		t.Errorf("the preemptor ran %v after it was submitted, before the victim's pods could stop (8s)", waited.Round(time.Second))
	}
	if sampler.peak() > 8 {
		t.Errorf("at most %d GPUs held at once, want at most 8", sampler.peak())
	}
	if events := get(t.Context(), "events", "-n", e.ns, "--field-selector", "reason=Preempted", "-o", "jsonpath={.items[*].message}"); !strings.Contains(events, "Preempted in ClusterQueue "+cq) {
		t.Errorf("Preempted events %q, want one on the job naming its ClusterQueue", events)
	}
	if events := get(t.Context(), "events", "-n", e.ns, "--field-selector", "reason=Requeued", "-o", "jsonpath={.items[*].message}"); !strings.Contains(events, "is released") {
		t.Errorf("Requeued events %q, want one on the job", events)
	}
}

// A waiting workload is looked at again when its namespace's labels
// change, not hours later (item 7).
func TestWaitingWorkloadFollowsNamespaceLabels(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("selector", fmt.Sprintf("  namespaceSelector: {matchLabels: {team: %s}}\n", e.ns), gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.submit(jobSpec{name: "outsider", queue: "main", completions: 1, parallelism: 1, gpus: 1, runFor: "30s"})
	e.waitPending("outsider", "does not match the namespaceSelector")
	if _, err := kubectl(t.Context(), "", "label", "namespace", e.ns, "team="+e.ns); err != nil {
		t.Fatal(err)
	}
	e.waitCondition("outsider", "Admitted", "True", "")
}

// A waiting workload whose priority class is deleted and created again is
// queued again at once, not hours later (item 7).
func TestWaitingWorkloadFollowsItsPriorityClass(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("class", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	class := e.priorityClass("returning", 100)
	e.submit(jobSpec{name: "holder", queue: "main", completions: 1, parallelism: 1, gpus: 8})
	e.running("holder", 1)
	e.submit(jobSpec{name: "waiter", queue: "main", priorityClass: class, completions: 1, parallelism: 1, gpus: 8, runFor: "5s"})
	e.waitPending("waiter", "needs 8 nvidia.com/gpu")
	if _, err := kubectl(t.Context(), "", "delete", "workloadpriorityclass", class); err != nil {
		t.Fatal(err)
	}
	e.waitPending("waiter", "WorkloadPriorityClass "+class+" does not exist")
	apply(t, fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: WorkloadPriorityClass\nmetadata: {name: %s}\nvalue: 100\n", class))
	// Its reason follows within seconds, not when the reason it had before
	// the class went would have been due for a refresh (30s).
	e.waitPendingWithin(10*time.Second, "waiter", "needs 8 nvidia.com/gpu")
	if _, err := kubectl(t.Context(), "", "delete", "job", "holder", "-n", e.ns); err != nil {
		t.Fatal(err)
	}
	e.waitCondition("waiter", "Admitted", "True", "")
}

// An evicted Workload whose owner no integration runs is requeued, and
// its quota released (item 8).
func TestWorkloadOfAnotherOwnerIsRequeued(t *testing.T) {
	e := newEnv(t)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	cq := e.queue("owned", "  preemption: {withinClusterQueue: LowerPriority}\n", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	apply(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owner, namespace: %s}\n", e.ns))
	uid := get(t.Context(), "configmap", "owner", "-n", e.ns, "-o", "jsonpath={.metadata.uid}")
	workloadYAML := func(name, class string) string {
		return fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: Workload
metadata:
  name: %s
  namespace: %s
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: %s, controller: true}]
spec:
  queueName: main
  priorityClassName: %s
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]
`, name, e.ns, uid, class)
	}
	apply(t, workloadYAML("owned-low", low))
	waitWorkload := func(name, jsonpath, want string) {
		t.Helper()
		eventually(t, name+" "+jsonpath+" = "+want, 90*time.Second, func(ctx context.Context) error {
			if got := get(ctx, "wl", name, "-n", e.ns, "-o", "jsonpath="+jsonpath); got != want {
				return fmt.Errorf("%q", got)
			}
			return nil
		})
	}
	waitWorkload("owned-low", `{.status.conditions[?(@.type=="Admitted")].status}`, "True")
	apply(t, workloadYAML("owned-high", high))
	waitWorkload("owned-low", `{.status.conditions[?(@.type=="Requeued")].status}`, "True")
	waitWorkload("owned-high", `{.status.conditions[?(@.type=="Admitted")].status}`, "True")
}
