package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// deployment applies a Deployment of replicas pods with gpus GPUs each,
// queued in queue.
func (e *env) deployment(name, queue string, replicas, gpus int) {
	apply(e.t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: %s}}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - name: serve
        image: registry.example/serve:latest
        resources:
          requests: {cpu: "1", nvidia.com/gpu: "%d"}
          limits: {nvidia.com/gpu: "%d"}
`, name, e.ns, queue, replicas, name, name, gpus, gpus))
}

// podCounts counts the pods of a label selector that are bound to a node
// and those that still carry Berth's scheduling gate.
func (e *env) podCounts(ctx context.Context, selector string) (bound, gated int, err error) {
	out, err := kubectl(ctx, "", "get", "pods", "-n", e.ns, "-l", selector, "-o",
		`jsonpath={range .items[*]}{.metadata.name}|{.spec.nodeName}|{.spec.schedulingGates[*].name}|{.metadata.deletionTimestamp}{"\n"}{end}`)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 4 || f[3] != "" {
			continue
		}
		if f[1] != "" {
			bound++
		}
		if strings.Contains(f[2], "berth.dev/admission") {
			gated++
		}
	}
	return bound, gated, nil
}

// waitPods waits until the pods of a label selector (app=NAME for a bare
// name) are bound and gated in these numbers.
func (e *env) waitPods(selector string, bound, gated int) {
	e.t.Helper()
	if !strings.Contains(selector, "=") {
		selector = "app=" + selector
	}
	eventually(e.t, fmt.Sprintf("%d pods of %s bound and %d gated", bound, selector, gated), 90*time.Second, func(ctx context.Context) error {
		b, g, err := e.podCounts(ctx, selector)
		if err != nil {
			return err
		}
		if b != bound || g != gated {
			return fmt.Errorf("%d bound, %d gated", b, g)
		}
		return nil
	})
}

// TestInferenceBorrowsTrainingsGPUs is the story of a shared cluster: an
// inference Deployment scales past its quota and borrows the GPUs training
// leaves idle; training submits a job and takes them back; the replicas
// beyond the inference quota wait, gated, saying why in numbers. The pods
// that actually run never hold more GPUs than the cohort has.
func TestInferenceBorrowsTrainingsGPUs(t *testing.T) {
	e := newEnv(t)
	e.sampleGPUs(12)
	h100 := e.flavor("h100")
	cohort := fmt.Sprintf("  cohortName: %s\n  preemption: {reclaimWithinCohort: Any}\n", e.name("cohort"))
	training := e.queue("training", cohort, gpuQuota{flavor: h100, gpus: "8"})
	inference := e.queue("inference", cohort, gpuQuota{flavor: h100, gpus: "4"})
	e.localQueue("training", training)
	e.localQueue("inference", inference)

	e.deployment("serve", "inference", 2, 2)
	e.waitPods("serve", 2, 0)
	if _, err := kubectl(t.Context(), "", "scale", "deployment", "serve", "-n", e.ns, "--replicas=8"); err != nil {
		t.Fatal(err)
	}
	// 4 GPUs of its own and 8 borrowed: six replicas run, two wait.
	e.waitPods("serve", 6, 2)
	eventually(t, "inference borrowing 8 GPUs", 30*time.Second, func(ctx context.Context) error {
		got := get(ctx, "cq", inference, "-o", `jsonpath={.status.flavorsUsage[0].resources[?(@.name=="nvidia.com/gpu")].borrowed}`)
		if got != "8" {
			return fmt.Errorf("borrowed %q", got)
		}
		return nil
	})
	// A new replica first says it waits to be considered; its reason, in
	// numbers, follows within a moment.
	e.gatedPodMessage(t, "serve", "needs 2 nvidia.com/gpu", "0 available")

	e.job("train", "training", "", 1, 8, "")
	e.waitCondition("train", "Admitted", "True", "")
	// Training took its 8 GPUs back: two replicas run on inference's own
	// quota, and the four preempted ones came back gated, with the others.
	e.waitPods("serve", 2, 6)
	out, err := kubectl(t.Context(), "", "get", "events", "-n", e.ns, "--field-selector", "reason=Preempted", "-o", "jsonpath={.items[*].message}")
	if err != nil || !strings.Contains(out, "Preempted in ClusterQueue "+inference) {
		t.Errorf("no Preempted event on the inference pods: %q %v", out, err)
	}
	t.Logf("the waiting replica says: %s", e.gatedPodMessage(t, "serve"))
}

// gatedPodMessage is the waiting message of one gated pod of a label
// selector (app=NAME for a bare name), through kubectl berth why, once it
// has every one of parts.
func (e *env) gatedPodMessage(t *testing.T, selector string, parts ...string) string {
	t.Helper()
	if !strings.Contains(selector, "=") {
		selector = "app=" + selector
	}
	var msg string
	eventually(t, "a gated pod of "+selector+" saying why it waits", 60*time.Second, func(ctx context.Context) error {
		names := get(ctx, "pods", "-n", e.ns, "-l", selector, "-o",
			`jsonpath={range .items[?(@.spec.schedulingGates[0].name=="berth.dev/admission")]}{.metadata.name}{" "}{end}`)
		pods := strings.Fields(names)
		if len(pods) == 0 {
			return fmt.Errorf("no gated pod")
		}
		out, err := berthPlugin(ctx, "why", "pod/"+pods[0], "-n", e.ns, "-o", "json")
		if err != nil {
			return err
		}
		var why struct{ Message string }
		if err := json.Unmarshal([]byte(out), &why); err != nil {
			return fmt.Errorf("kubectl berth why -o json: %w: %s", err, out)
		}
		if msg = why.Message; msg == "" {
			return fmt.Errorf("pod %s has no message yet", pods[0])
		}
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				return fmt.Errorf("pod %s says %q, without %q", pods[0], msg, p)
			}
		}
		return nil
	})
	return msg
}

func TestPodsOutsideTheSelectedNamespacesAreNeverGated(t *testing.T) {
	name := fmt.Sprintf("e2e-system-%d", seq.Add(1))
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: kube-system, labels: {berth.dev/queue-name: main}}
spec:
  containers: [{name: c, image: registry.example/e2e:latest}]
`, name))
	t.Cleanup(func() {
		_, _ = kubectl(context.Background(), "", "delete", "pod", name, "-n", "kube-system", "--wait=false")
	})
	if gates := get(t.Context(), "pod", name, "-n", "kube-system", "-o", "jsonpath={.spec.schedulingGates}"); gates != "" {
		t.Errorf("pod %s in kube-system has the scheduling gates %s", name, gates)
	}
}
