package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// escapeRow is one line of the escape matrix: what a job's owner tries,
// on which kind, and how Berth answered.
type escapeRow struct {
	kind, action, outcome string
}

// escapeTable collects the matrix's rows, printed when it ends.
type escapeTable struct {
	mu   sync.Mutex
	rows []escapeRow
}

func (tb *escapeTable) add(kind, action, outcome string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, escapeRow{kind, action, outcome})
}

func (tb *escapeTable) String() string {
	var b strings.Builder
	b.WriteString("| kind | the owner tries | outcome |\n|---|---|---|\n")
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.kind, r.action, r.outcome)
	}
	return b.String()
}

// TestEscapeMatrix tries, as a job's owner with the rights of their
// namespace, what would run more than the ClusterQueue's quota or hold
// quota for good, on each kind it applies to. Every row samples the GPUs
// of the pods bound to nodes every second and fails when they exceed the
// quota; each says how Berth answered (refused, naming the field; waited;
// stopped), and the table of outcomes is printed at the end.
func TestEscapeMatrix(t *testing.T) {
	table := &escapeTable{}
	t.Cleanup(func() { t.Logf("the escape matrix:\n%s", table) })

	// A running pod's berth.dev/ labels, annotations and requests are
	// Berth's: removing berth.dev/managed would take it out of the
	// controller's sight.
	for _, kind := range []string{"Job", "Pod", "Deployment", "StatefulSet", "LeaderWorkerSet"} {
		t.Run(kind+"/owned keys of a running pod", func(t *testing.T) {
			e := newEnv(t)
			e.localQueue("main", e.queue("owned", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
			e.sampleGPUs(8)
			selector := e.runningOf(kind, "owned", 8)
			pod := strings.TrimPrefix(strings.Fields(get(t.Context(), "pods", "-n", e.ns, "-l", selector, "-o", "name"))[0], "pod/")
			e.refused([]string{"metadata.labels[berth.dev/managed]", "only Berth"}, "label", "pod", pod, "-n", e.ns, "berth.dev/managed-")
			e.refused([]string{"metadata.labels[berth.dev/workload]"}, "label", "pod", pod, "-n", e.ns, "--overwrite", "berth.dev/workload=other")
			e.refused([]string{"metadata.annotations[berth.dev/podset-size]"}, "annotate", "pod", pod, "-n", e.ns, "--overwrite", "berth.dev/podset-size=4")
			// An in-place resize (pods/resize) is refused by Berth's webhook
			// too (pkg/jobs/pod TestValidateOnUpdate); kwok's nodes do not
			// support resizing, so the API server refuses it first here.
			e.auditClean()
			table.add(kind, "remove berth.dev/managed, change berth.dev/workload or berth.dev/podset-size of a running pod", "refused, naming the key")
		})
	}

	t.Run("Job/GPUs in limits only", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("limits", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		e.sampleGPUs(8)
		e.submit(jobSpec{name: "first", queue: "main", completions: 1, parallelism: 1, gpus: 8})
		e.running("first", 1)
		apply(t, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: limits, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.example/e2e:latest
        resources:
          requests: {cpu: "1"}
          limits: {nvidia.com/gpu: "8"}
`, e.ns))
		msg := e.waitPending("limits", "nvidia.com/gpu")
		e.auditClean()
		table.add("Job", "ask for 8 GPUs in limits alone beside a running 8-GPU job (quota 8)", "waits: "+msg)
	})

	// A deleted pod of a Job counts as failed, and the Job controller's
	// backoff waits 10s before it makes another: the pod takes longer
	// than that to stop.
	t.Run("Job/a pod deleted with a long grace period", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("grace", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		sampler := e.sampleGPUs(8)
		e.submit(jobSpec{name: "graceful", queue: "main", completions: 2, parallelism: 1, gpus: 8, stopFor: "20s"})
		e.running("graceful", 1)
		first := get(t.Context(), "pods", "-n", e.ns, "-l", "job-name=graceful", "-o", "name")
		if _, err := kubectl(t.Context(), "", "delete", first, "-n", e.ns, "--wait=false"); err != nil {
			t.Fatal(err)
		}
		// The sampler watches while the deleted pod stops and its
		// replacement starts; the replacement must not even exist before
		// the deleted pod is gone (the scheduler's gang placement would
		// keep it off the nodes, but that is the last line, not the rule).
		most := 0
		eventually(t, "the replacement running once the deleted pod is gone", time.Minute, func(ctx context.Context) error {
			pods := strings.Fields(get(ctx, "pods", "-n", e.ns, "-l", "job-name=graceful", "-o", "name"))
			most = max(most, len(pods))
			out := get(ctx, "pods", "-n", e.ns, "-l", "job-name=graceful", "--field-selector=status.phase=Running", "-o", "name")
			if out == "" || out == first {
				return fmt.Errorf("running: %q", out)
			}
			return nil
		})
		e.auditClean()
		if most > 1 {
			t.Errorf("%d pods of the job existed at once while one of them was stopping: the replacement came before the deleted pod was gone", most)
		}
		table.add("Job", "delete a running pod that takes 20s to stop", fmt.Sprintf("replaced once stopped: at most %d of 8 GPUs held", sampler.peak()))
	})

	// An owner reference is its creator's to write: naming a queued Job
	// as a Deployment's controller would, if Berth took the Deployment
	// for a part of that Job, let it skip the namespace's default
	// LocalQueue and run its pods ungated.
	t.Run("Deployment/claim a queued Job as its controller", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("default", e.queue("claims", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		e.sampleGPUs(8)
		e.submit(jobSpec{name: "anchor", queue: "default", completions: 1, parallelism: 1, gpus: 8})
		e.running("anchor", 1)
		uid := get(t.Context(), "job", "anchor", "-n", e.ns, "-o", "jsonpath={.metadata.uid}")
		apply(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: claims
  namespace: %s
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: anchor, uid: %s, controller: true}]
spec:
  replicas: 1
  selector: {matchLabels: {app: claims}}
  template:
    metadata: {labels: {app: claims}}
    spec:
      containers:
      - name: main
        image: registry.example/e2e:latest
        resources:
          requests: {cpu: "1", nvidia.com/gpu: "8"}
          limits: {nvidia.com/gpu: "8"}
`, e.ns, uid))
		if got := get(t.Context(), "deployment", "claims", "-n", e.ns, "-o", "jsonpath={.metadata.labels.berth\\.dev/queue-name}"); got != "default" {
			t.Errorf("the Deployment's queue label is %q, want default", got)
		}
		e.waitPods("claims", 0, 1)
		msg := e.gatedPodMessage(t, "claims", "needs 8 nvidia.com/gpu")
		e.auditClean()
		table.add("Deployment", "name the owner's running queued Job as its controller, where a default LocalQueue takes unlabelled jobs", "queued in the default LocalQueue; its pod waits: "+msg)
	})

	t.Run("Job/delete --cascade=orphan", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("orphan", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		e.sampleGPUs(8)
		e.submit(jobSpec{name: "orphaned", queue: "main", completions: 2, parallelism: 2, gpus: 4})
		e.running("orphaned", 2)
		if _, err := kubectl(t.Context(), "", "delete", "job", "orphaned", "-n", e.ns, "--cascade=orphan"); err != nil {
			t.Fatal(err)
		}
		e.submit(jobSpec{name: "next", queue: "main", completions: 1, parallelism: 1, gpus: 8, runFor: "5s"})
		e.running("next", 1)
		eventually(t, "no orphaned pod left on a node", time.Minute, func(ctx context.Context) error {
			if out := get(ctx, "pods", "-n", e.ns, "-l", "job-name=orphaned", "-o", "name"); out != "" {
				return fmt.Errorf("pods left: %s", out)
			}
			return nil
		})
		e.auditClean()
		events := get(t.Context(), "events", "-n", e.ns, "--field-selector", "reason=Orphaned", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "--cascade=orphan") {
			t.Errorf("Orphaned events %q, want one saying what Berth did", events)
		}
		table.add("Job", "kubectl delete job --cascade=orphan", "its pods stopped, the quota released once they are gone, the next job admitted")
	})

	t.Run("Job/a name of 60 characters", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("long", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		e.sampleGPUs(8)
		name := "j" + strings.Repeat("x", 59)
		e.submit(jobSpec{name: name, queue: "main", completions: 1, parallelism: 1, gpus: 8})
		e.running(name, 1)
		e.auditClean()
		table.add("Job", "name a queued Job with 60 characters", "admitted and running")
	})

	t.Run("Job/parallelism 0", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("zero", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		_, err := kubectl(t.Context(), e.jobYAML(jobSpec{name: "zero", queue: "main", completions: 1, parallelism: 0, gpus: 1}), "apply", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), "spec.parallelism") || !strings.Contains(err.Error(), "kubectl berth stop") {
			t.Fatalf("a queued Job of parallelism 0: %v; want a refusal naming spec.parallelism", err)
		}
		table.add("Job", "create a queued Job of parallelism 0", "refused, naming spec.parallelism and kubectl berth stop")
	})

	t.Run("Pod/an owner reference to a Job that Berth does not hold", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("forged", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		// A Job of the owner's that is not queued: naming it as the pod's
		// controller must not let the pod skip its queue.
		apply(t, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: free, namespace: %s}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: registry.example/e2e:latest}]
`, e.ns))
		uid := get(t.Context(), "job", "free", "-n", e.ns, "-o", "jsonpath={.metadata.uid}")
		out, err := kubectl(t.Context(), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: forged
  namespace: %s
  labels: {berth.dev/queue-name: main}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: free, uid: %s, controller: true}]
spec:
  containers: [{name: c, image: registry.example/e2e:latest, resources: {requests: {nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}}]
`, e.ns, uid), "create", "-f", "-", "-o", "jsonpath={.spec.schedulingGates[*].name}")
		if err != nil {
			t.Fatal(err)
		}
		if out != "berth.dev/admission" {
			t.Fatalf("a queued pod naming a Job Berth does not hold was created with the gates %q, want Berth's", out)
		}
		table.add("Pod", "name a Job of one's own that is not queued as the controller of a queued pod", "held by Berth's gate, queued as a pod")
	})

	t.Run("Pod group/another role on a held pod", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("roles", "", gpuQuota{flavor: e.flavor("h100"), gpus: "2"}))
		for _, p := range []struct{ name, gpus string }{{"big", "8"}, {"small", "1"}} {
			apply(t, groupPodOf(e.ns, p.name, "g", 3, p.gpus))
		}
		role := get(t.Context(), "pod", "small", "-n", e.ns, "-o", `jsonpath={.metadata.annotations.berth\.dev/pod-group-role}`)
		e.refused([]string{"metadata.annotations[berth.dev/pod-group-role]"}, "annotate", "pod", "big", "-n", e.ns, "--overwrite", "berth.dev/pod-group-role="+role)
		e.refused([]string{"spec.schedulingGates"}, "patch", "pod", "big", "-n", e.ns, "--type=json", "-p", `[{"op":"remove","path":"/spec/schedulingGates"}]`)
		table.add("Pod group", "give an 8-GPU pod the role of a 1-GPU pod; remove Berth's gate", "refused, naming the annotation and spec.schedulingGates")
	})

	rayEscapes(t, table)
	trainJobEscapes(t, table)
	elasticEscapes(t, table)

	t.Run("JobSet/a podset just below 2^63 beside a small one", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("wrap", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		e.sampleGPUs(8)
		rj := func(name, gpus string) string {
			return fmt.Sprintf(`  - name: %s
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            restartPolicy: Never
            containers: [{name: c, image: registry.example/e2e:latest, resources: {requests: {nvidia.com/gpu: %q}, limits: {nvidia.com/gpu: %q}}}]
`, name, gpus, gpus)
		}
		apply(t, fmt.Sprintf("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: wrap, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n  replicatedJobs:\n%s%s",
			e.ns, rj("small", "2"), rj("huge", "9223372036854775806")))
		eventually(t, "the JobSet's Workload waiting", 90*time.Second, func(ctx context.Context) error {
			out := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={.items[*].status.conditions[?(@.type=="QuotaReserved")].status}`)
			if out != "False" {
				return fmt.Errorf("QuotaReserved %q", out)
			}
			return nil
		})
		time.Sleep(3 * time.Second)
		if out := get(t.Context(), "wl", "-n", e.ns, "-o", `jsonpath={.items[*].status.conditions[?(@.type=="QuotaReserved")].status}`); out != "False" {
			t.Fatalf("the JobSet's Workload: QuotaReserved %q, want it waiting", out)
		}
		table.add("JobSet", "ask for 9223372036854775806 GPUs in one podset beside 2 in another", "waits; the sum saturates instead of wrapping")
	})
}

// auditClean waits until kubectl berth audit finds nothing unaccounted in
// e's namespace: what runs there is what was admitted, read from the pods.
func (e *env) auditClean() {
	e.t.Helper()
	eventually(e.t, "kubectl berth audit to find nothing unaccounted in "+e.ns, 30*time.Second, func(ctx context.Context) error {
		out, err := berthPlugin(ctx, "audit", "-n", e.ns)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// runningOf makes a workload of kind in the queue "main" with one pod of
// gpus GPUs, waits until it runs, and returns the label selector of its
// pods.
func (e *env) runningOf(kind, name string, gpus int) string {
	e.t.Helper()
	spec := fmt.Sprintf(`      containers:
      - name: main
        image: registry.example/e2e:latest
        resources:
          requests: {cpu: "1", nvidia.com/gpu: "%d"}
          limits: {nvidia.com/gpu: "%d"}
`, gpus, gpus)
	switch kind {
	case "Job":
		e.submit(jobSpec{name: name, queue: "main", completions: 1, parallelism: 1, gpus: gpus})
		e.running(name, 1)
		return "job-name=" + name
	case "Pod":
		apply(e.t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main, app: %s}}
spec:
%s`, name, e.ns, name, strings.ReplaceAll(spec, "      ", "  ")))
	case "LeaderWorkerSet":
		apply(e.t, fmt.Sprintf(`apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 1
    workerTemplate:
      metadata: {labels: {app: %s}}
      spec:
%s`, name, e.ns, name, strings.ReplaceAll(spec, "      ", "        ")))
	case "Deployment", "StatefulSet":
		extra := ""
		if kind == "StatefulSet" {
			extra = "  serviceName: " + name + "\n"
		}
		apply(e.t, fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  replicas: 1
%s  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
%s`, kind, name, e.ns, extra, name, name, spec))
	}
	selector := "app=" + name
	eventually(e.t, kind+" "+name+" running", 90*time.Second, func(ctx context.Context) error {
		out := get(ctx, "pods", "-n", e.ns, "-l", selector, "--field-selector=status.phase=Running", "-o", "name")
		if len(strings.Fields(out)) != 1 {
			return fmt.Errorf("running: %q", out)
		}
		return nil
	})
	return selector
}
