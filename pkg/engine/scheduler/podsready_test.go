package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestBlockAdmissionWaitsForReadyPods: with WithBlockAdmission, a workload
// that fits waits while the pods of the one admitted before it are not
// ready, says so, and is admitted once they are; the readiness wakes the
// scheduler.
func TestBlockAdmissionWaitsForReadyPods(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("a", "", gpus("h100", "8")).Obj()},
		pending: []*berthv1alpha1.Workload{
			mkWL("w1", "ns").Queue("a").Request(1, "nvidia.com/gpu", "1").Obj(),
			mkWL("w2", "ns").Queue("a").Created(time.Second).Request(1, "nvidia.com/gpu", "1").Obj(),
		},
	})
	e.sched = New(e.cache, e.queues, e.applier, WithClock(func() time.Time { return utiltesting.BaseTime }), WithBlockAdmission())
	ctx := context.Background()
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/w1"]; !ok {
		t.Fatalf("w1 was not admitted; pending: %q", e.applier.pending["ns/w1"])
	}
	if _, ok := e.applier.admitted["ns/w2"]; ok {
		t.Fatal("w2 was admitted while the pods of w1 were not ready")
	}
	if msg := e.applier.pending["ns/w2"]; !strings.Contains(msg, "Waiting for the pods of 1 admitted workload(s), ns/w1 first, to be ready") {
		t.Errorf("w2 pending message = %q, want it to name w1", msg)
	}
	drainWakeup(e.queues.Wakeup())

	// The admission confirmed, pods not ready yet: still blocked, no wake.
	running := mkWL("w1", "ns").Queue("a").Request(1, "nvidia.com/gpu", "1").AdmittedIn("a", "h100")
	e.cache.AddOrUpdateWorkload(running.Obj())
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/w2"]; ok {
		t.Fatal("w2 was admitted while the pods of w1 were not ready")
	}
	drainWakeup(e.queues.Wakeup())

	e.cache.AddOrUpdateWorkload(running.Condition(berthv1alpha1.WorkloadPodsReady, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReady, 0).Obj())
	select {
	case <-e.queues.Wakeup():
	default:
		t.Fatal("the scheduler was not woken when the last pods became ready")
	}
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/w2"]; !ok {
		t.Errorf("w2 was not admitted once the pods of w1 were ready; pending: %q", e.applier.pending["ns/w2"])
	}
}

func drainWakeup(c <-chan struct{}) {
	select {
	case <-c:
	default:
	}
}
