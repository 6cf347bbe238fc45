package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// node creates a kwok node of the given GPU family with 8 GPUs, and deletes
// it at the end.
func (e *env) node(base, family string) string {
	name := e.name(base)
	e.clusterScoped("node", name, fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %s
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: %s, kubernetes.io/os: linux, type: kwok, gpu.berth.dev/family: %s}
status:
  allocatable: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
  capacity: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}
`, name, name, family))
	return name
}

// TestNodeFailuresRequeueTheWholeGang: a job of two 8-GPU pods runs on two
// nodes of its own. When one node stops being ready (kwok plays a dead
// kubelet), the whole job is evicted with reason NodeFailures after the
// local cluster's 5s grace period and requeued, and the event names the
// node; its pod on the healthy node is stopped too. Once the node is back,
// the job runs again on both; when a node is deleted, it is evicted again.
func TestNodeFailuresRequeueTheWholeGang(t *testing.T) {
	e := newEnv(t)
	family := e.name("nf")
	a, b := e.node("nf-a", family), e.node("nf-b", family)
	cq := e.queue("nodefailure", "", gpuQuota{flavor: e.flavor(family), gpus: "16"})
	e.localQueue("main", cq)
	e.job("gang", "main", "", 2, 8, "")
	runningOn := func(want ...string) {
		eventually(t, "the gang's pods running on "+strings.Join(want, " and "), 90*time.Second, func(ctx context.Context) error {
			out := get(ctx, "pods", "-n", e.ns, "-l", "job-name=gang", "--field-selector", "status.phase=Running", "-o", "jsonpath={range .items[*]}{.spec.nodeName} {end}")
			for _, n := range want {
				if !strings.Contains(out, n) {
					return fmt.Errorf("running on %q", out)
				}
			}
			return nil
		})
	}
	// The job is admitted again within a second or two of its eviction,
	// which turns Evicted False: the eviction is followed in the events,
	// and the requeue in status.requeueState.count.
	evictedFor := func(node, how string, requeues int) {
		eventually(t, "the gang evicted for node "+node, 90*time.Second, func(ctx context.Context) error {
			out := get(ctx, "events", "-n", e.ns, "--field-selector", "reason=Evicted,type=Warning", "-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "(NodeFailures): Node "+node+" failed") && strings.Contains(line, how) &&
					strings.Contains(line, "stayed so for 5s (nodeFailures.gracePeriod); it ran 1 of the workload's pods (gang-") {
					return nil
				}
			}
			return fmt.Errorf("Warning events: %q", out)
		})
		eventually(t, "the gang requeued", 90*time.Second, func(ctx context.Context) error {
			n := get(ctx, "wl", "-n", e.ns, e.workload(ctx, "gang"), "-o", "jsonpath={.status.requeueState.count}")
			if n != fmt.Sprint(requeues) {
				return fmt.Errorf("requeueState.count %q, want %d", n, requeues)
			}
			return nil
		})
	}
	runningOn(a, b)

	if _, err := kubectl(t.Context(), "", "annotate", "node", a, "node-down.stage.kwok.x-k8s.io=true"); err != nil {
		t.Fatal(err)
	}
	// Requeued only once both pods are gone: the one on the healthy node
	// was stopped too.
	evictedFor(a, "(Ready is False (KubeletDown))", 1)

	if _, err := kubectl(t.Context(), "", "annotate", "node", a, "node-down.stage.kwok.x-k8s.io-"); err != nil {
		t.Fatal(err)
	}
	runningOn(a, b)
	if _, err := kubectl(t.Context(), "", "delete", "node", b, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	// Its pod on the deleted node goes when the pod garbage collector
	// removes it; the requeue waits for that.
	evictedFor(b, "(deleted)", 2)
}
