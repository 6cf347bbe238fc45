package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGangPlacementWithBerthScheduler submits a 4-pod job whose pods fit
// on the free nodes only 3 at a time: Berth's scheduler binds none of
// them, and binds all 4 once room appears.
func TestGangPlacementWithBerthScheduler(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("gang", "  schedulerName: berth-scheduler\n", gpuQuota{flavor: e.flavor("a100"), gpus: "32"})
	e.localQueue("main", cq)
	// Outside Berth, a pod takes a whole A100 node.
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: blocker, namespace: %s}
spec:
  nodeName: a100-0
  containers:
  - name: main
    image: registry.example/blocker:latest
    resources:
      requests: {nvidia.com/gpu: "8"}
      limits: {nvidia.com/gpu: "8"}
`, e.ns))
	eventually(t, "the blocker running", 60*time.Second, func(ctx context.Context) error {
		if phase := get(ctx, "pod", "blocker", "-n", e.ns, "-o", "jsonpath={.status.phase}"); phase != "Running" {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})

	e.job("gang", "main", "", 4, 8, "")
	e.waitCondition("gang", "Admitted", "True", "")
	pods := func(ctx context.Context) string {
		return get(ctx, "pods", "-n", e.ns, "-l", "job-name=gang", "-o",
			"jsonpath={range .items[*]}{.spec.schedulerName}:{.spec.nodeName}:{.status.phase} {end}")
	}
	eventually(t, "the job's 4 pods created", 60*time.Second, func(ctx context.Context) error {
		if n := len(strings.Fields(pods(ctx))); n != 4 {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
	for range 10 {
		for _, p := range strings.Fields(pods(t.Context())) {
			if parts := strings.Split(p, ":"); parts[1] != "" {
				t.Fatalf("a pod was bound while its gang cannot all be placed: %s", pods(t.Context()))
			}
		}
		time.Sleep(500 * time.Millisecond)
	}

	if _, err := kubectl(t.Context(), "", "delete", "pod", "blocker", "-n", e.ns, "--wait=true"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "all 4 pods bound by berth-scheduler on 4 A100 nodes", 90*time.Second, func(ctx context.Context) error {
		nodes := map[string]bool{}
		for _, p := range strings.Fields(pods(ctx)) {
			parts := strings.Split(p, ":")
			if parts[0] != "berth-scheduler" || !strings.HasPrefix(parts[1], "a100-") || parts[2] != "Running" {
				return fmt.Errorf("pods: %s", pods(ctx))
			}
			nodes[parts[1]] = true
		}
		if len(nodes) != 4 {
			return fmt.Errorf("pods on %d nodes: %s", len(nodes), pods(ctx))
		}
		return nil
	})
}
