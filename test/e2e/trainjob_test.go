package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// trainingRuntime creates a ClusterTrainingRuntime of one trainer step
// whose pods complete runFor after they start, and returns its name.
func (e *env) trainingRuntime(runFor string) string {
	name := e.name("torch")
	e.clusterScoped("clustertrainingruntime", name, fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: %s}
spec:
  mlPolicy: {numNodes: 1}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              metadata: {annotations: {pod-complete.stage.kwok.x-k8s.io/delay: %q}}
              spec:
                containers:
                - name: node
                  image: registry.example/e2e:latest
                  resources: {requests: {cpu: "1"}}
`, name, runFor))
	return name
}

// TestTrainJobWithTrainer runs Kubeflow Trainer's real controller: a
// TrainJob of 4 nodes of 8 GPUs, 16 of them borrowed from its cohort, is
// admitted whole and runs where its quota is; a Job of higher priority
// preempts it, and Trainer's JobSet is suspended and its pods gone before
// the Job runs; requeued, the TrainJob runs again and completes. The GPUs
// that bound pods hold never exceed the 32 of the cohort, and the audit
// finds nothing unaccounted.
func TestTrainJobWithTrainer(t *testing.T) {
	e := newEnv(t)
	h100 := e.flavor("h100")
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	cohort := fmt.Sprintf("  cohortName: %s\n  preemption: {withinClusterQueue: LowerPriority}\n", e.name("cohort"))
	train := e.queue("train", cohort, gpuQuota{flavor: h100, gpus: "16"})
	e.queue("idle", cohort, gpuQuota{flavor: h100, gpus: "16"})
	e.localQueue("main", train)
	sampler := e.sampleGPUs(32)
	runtime := e.trainingRuntime("20s")
	apply(t, fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: llama, namespace: %s, labels: {berth.dev/queue-name: main, berth.dev/priority-class: %s}}
spec:
  runtimeRef: {name: %s}
  trainer:
    numNodes: 4
    resourcesPerNode:
      requests: {cpu: "1", nvidia.com/gpu: "8"}
      limits: {nvidia.com/gpu: "8"}
`, e.ns, low, runtime))
	running := func(what string) {
		t.Helper()
		eventually(t, what, 120*time.Second, func(ctx context.Context) error {
			pods := e.podsOf(ctx, e.workload(ctx, "llama"))
			if n := strings.Count(pods, "node=Running@h100-"); n != 4 {
				return fmt.Errorf("the TrainJob's pods: %q", pods)
			}
			return nil
		})
	}
	e.waitCondition("llama", "Admitted", "True", "")
	running("the TrainJob's 4 nodes running on H100s")
	if got := get(t.Context(), "cq", train, "-o", `jsonpath={.status.flavorsUsage[0].resources[?(@.name=="nvidia.com/gpu")].borrowed}`); got != "16" {
		t.Errorf("the ClusterQueue borrows %q GPUs, want 16", got)
	}
	if out := get(t.Context(), "jobset", "llama", "-n", e.ns, "-o", "jsonpath={.metadata.labels.berth\\.dev/queue-name}"); out != "main" {
		t.Errorf("Trainer's JobSet has queue label %q; want main, handed down", out)
	}

	e.job("urgent", "main", high, 2, 8, "10s")
	e.waitCondition("llama", "Preempted", "True", "InClusterQueue")
	eventually(t, "the TrainJob suspended and its pods gone", 90*time.Second, func(ctx context.Context) error {
		if s := get(ctx, "jobset", "llama", "-n", e.ns, "-o", "jsonpath={.spec.suspend}"); s != "true" {
			return fmt.Errorf("its JobSet's spec.suspend is %q", s)
		}
		if pods := e.podsOf(ctx, e.workload(ctx, "llama")); pods != "" {
			return fmt.Errorf("pods left: %q", pods)
		}
		return nil
	})
	e.waitCondition("urgent", "Admitted", "True", "")
	e.waitPending("llama", "needs 32 nvidia.com/gpu")
	// The Job ends 10s after it runs; the TrainJob is admitted again, and
	// its pods complete 20s after they start.
	e.waitCondition("urgent", "Finished", "True", "")
	running("the requeued TrainJob running again")
	eventually(t, "the TrainJob complete", 120*time.Second, func(ctx context.Context) error {
		s, _, m := e.condition(ctx, "llama", "Finished")
		if s != "True" {
			return fmt.Errorf("Finished is %q: %s", s, m)
		}
		return nil
	})
	if peak := sampler.peak(); peak > 32 {
		t.Errorf("bound pods held %d GPUs at once, over the cohort's 32", peak)
	}
	e.auditClean()
}

// trainJobEscapes are the escape matrix's rows for TrainJobs, run by
// Kubeflow Trainer's controller.
func trainJobEscapes(t *testing.T, table *escapeTable) {
	t.Run("TrainJob/start Trainer's JobSet, or drop the handed-down queue, while it waits", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("trainwait", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		e.sampleGPUs(8)
		runtime := e.trainingRuntime("")
		e.job("holder", "main", "", 1, 8, "")
		e.waitCondition("holder", "Admitted", "True", "")
		apply(t, fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: waiting, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  runtimeRef: {name: %s}
  trainer:
    numNodes: 2
    resourcesPerNode: {requests: {cpu: "1", nvidia.com/gpu: "4"}, limits: {nvidia.com/gpu: "4"}}
`, e.ns, runtime))
		e.waitPending("waiting", "needs 8 nvidia.com/gpu")
		eventually(t, "Trainer's JobSet made, suspended", 60*time.Second, func(ctx context.Context) error {
			if s := get(ctx, "jobset", "waiting", "-n", e.ns, "-o", "jsonpath={.spec.suspend}"); s != "true" {
				return fmt.Errorf("spec.suspend is %q", s)
			}
			return nil
		})
		e.refused([]string{"spec.suspend", "TrainJob waiting", "not admitted"}, "patch", "jobset", "waiting", "-n", e.ns, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		e.refused([]string{"spec.suspend"}, "patch", "trainjob", "waiting", "-n", e.ns, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		e.refused([]string{"spec.labels[berth.dev/queue-name]"}, "patch", "trainjob", "waiting", "-n", e.ns, "--type=json",
			"-p", `[{"op":"remove","path":"/spec/labels/berth.dev~1queue-name"}]`)
		e.refused([]string{"metadata.labels[berth.dev/queue-name]"}, "label", "jobset", "waiting", "-n", e.ns, "berth.dev/queue-name-")
		e.auditClean()
		table.add("TrainJob", "start the JobSet Trainer made for it, or take the queue it hands down off the TrainJob or the JobSet, while it waits", "refused, naming the field")
	})

	t.Run("TrainJob/GPUs in resourcesPerNode.limits only, then delete --cascade=orphan", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("trainorphan", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"}))
		e.sampleGPUs(8)
		apply(t, fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: limits, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  runtimeRef: {name: %s}
  trainer:
    numNodes: 2
    resourcesPerNode: {limits: {nvidia.com/gpu: "4"}}
`, e.ns, e.trainingRuntime("10m")))
		wl := ""
		eventually(t, "the TrainJob's 2 nodes of 4 GPUs, asked for in limits, running", 90*time.Second, func(ctx context.Context) error {
			wl = e.workload(ctx, "limits")
			if n := strings.Count(e.podsOf(ctx, wl), "=Running@h100-"); wl == "" || n != 2 {
				return fmt.Errorf("Workload %q: %q", wl, e.podsOf(ctx, wl))
			}
			return nil
		})
		e.job("next", "main", "", 1, 8, "")
		e.waitPending("next", "needs 8 nvidia.com/gpu, 0 available")
		if _, err := kubectl(t.Context(), "", "delete", "trainjob", "limits", "-n", e.ns, "--cascade=orphan"); err != nil {
			t.Fatal(err)
		}
		e.waitCondition("next", "Admitted", "True", "")
		eventually(t, "the Job running, the kept JobSet's pods gone and the JobSet queued on its own, suspended", 90*time.Second, func(ctx context.Context) error {
			if pods := e.podsOf(ctx, wl); pods != "" {
				return fmt.Errorf("pods of the orphaned TrainJob: %q", pods)
			}
			if s := get(ctx, "jobset", "limits", "-n", e.ns, "-o", "jsonpath={.spec.suspend}"); s != "true" {
				return fmt.Errorf("the kept JobSet's spec.suspend is %q", s)
			}
			if s, _, msg := e.condition(ctx, "limits", "QuotaReserved"); s != "False" || !strings.Contains(msg, "needs 8 nvidia.com/gpu") {
				return fmt.Errorf("the kept JobSet's Workload: QuotaReserved %q: %s", s, msg)
			}
			e.running("next", 1)
			return nil
		})
		e.auditClean()
		table.add("TrainJob", "ask for GPUs in resourcesPerNode.limits only; delete the TrainJob with --cascade=orphan while it runs",
			"counted (a Job of the 8 GPUs left waits); the kept JobSet's pods stopped, and the JobSet waits, suspended, in the queue")
	})
}
