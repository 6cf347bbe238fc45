package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestFailedWriteIsForgottenAndRetried(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Obj()},
		pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj()},
	})
	e.applier.failAdmit["ns/a"] = errWrite
	first := e.sched.Schedule(context.Background())
	fr := resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}
	if got := e.cache.Snapshot().ClusterQueues["q"].Used(fr); got != 0 {
		t.Errorf("usage after a failed write = %d, want 0 (rolled back)", got)
	}
	select {
	case <-e.queues.Wakeup():
	default:
		t.Error("a failed write did not wake the scheduler for a retry")
	}
	delete(e.applier.failAdmit, "ns/a")
	second := e.sched.Schedule(context.Background())
	if diff := cmp.Diff([]Stats{{}, {Admitted: 1}}, []Stats{first, second}); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestPreemptorIsAdmittedOnceVictimsAreGone(t *testing.T) {
	victim := mkWL("low", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj()
	e := newEnv(envInputs{
		flavors:  gpuFlavors(),
		queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Preemption(berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority}).Obj()},
		admitted: []*berthv1alpha1.Workload{victim},
		pending:  []*berthv1alpha1.Workload{mkWL("high", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
	})
	ctx := context.Background()
	var got []Stats
	got = append(got, e.sched.Schedule(ctx))
	// The victim is still terminating: the preemptor waits, preempting
	// nothing more.
	got = append(got, e.sched.Schedule(ctx))
	e.cache.DeleteWorkload("ns/low")
	e.queues.QueueInadmissible("q")
	got = append(got, e.sched.Schedule(ctx))
	want := []Stats{{Preempted: 1, Pending: 1}, {Pending: 1}, {Admitted: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats per cycle (-want +got):\n%s", diff)
	}
	if _, ok := e.applier.admitted["ns/high"]; !ok {
		t.Errorf("preemptor not admitted")
	}
}

func TestStartRunsOnWakeup(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Obj()},
	})
	applied := make(chan string, 1)
	e.sched.applier = notifyApplier{fakeApplier: e.applier, admitted: applied}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.sched.Start(ctx)
	_ = e.queues.AddOrUpdateWorkload(mkWL("a", "ns").Request(1, "nvidia.com/gpu", "1").Obj(), "q")
	select {
	case key := <-applied:
		if key != "ns/a" {
			t.Errorf("admitted %s, want ns/a", key)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not run a cycle after a workload was added")
	}
}

type notifyApplier struct {
	*fakeApplier
	admitted chan string
}

func (n notifyApplier) Admit(ctx context.Context, wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	n.admitted <- wl.Namespace + "/" + wl.Name
	return wl, nil
}

func TestMultiplePodSetsShareQuota(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4"), gpus("a100", "4")).Obj()},
		pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").PodSets(
			*utiltesting.MakePodSet("driver", 1).Request("nvidia.com/gpu", "2").Obj(),
			*utiltesting.MakePodSet("workers", 2).Request("nvidia.com/gpu", "2").Obj(),
		).Obj()},
	})
	e.sched.Schedule(context.Background())
	want := "q: driver=1 nvidia.com/gpu:h100 workers=2 nvidia.com/gpu:a100"
	if adm := e.applier.admitted["ns/a"]; adm == nil || flavorsOf(adm) != want {
		t.Errorf("admission = %v, want %s", e.applier.admitted["ns/a"], want)
	}
}

// TestFailedWriteKeepsQuotaForTheCycle: a head whose admission write fails
// keeps its quota in the cycle's snapshot, so that no later head of the
// cycle takes it; written one by one or together, the same holds.
func TestFailedWriteKeepsQuotaForTheCycle(t *testing.T) {
	for _, parallelism := range []int{1, 4} {
		e := newEnv(envInputs{
			flavors: gpuFlavors(),
			queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Obj()},
			pending: []*berthv1alpha1.Workload{
				mkWL("high", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj(),
				mkWL("low", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj(),
			},
		})
		e.sched.parallelism = parallelism
		e.applier.failAdmit["ns/high"] = errWrite
		got := e.sched.Schedule(context.Background())
		if diff := cmp.Diff(Stats{Pending: 1}, got); diff != "" {
			t.Errorf("parallelism %d: stats (-want +got):\n%s", parallelism, diff)
		}
		if _, ok := e.applier.admitted["ns/low"]; ok {
			t.Errorf("parallelism %d: low took the quota of a head whose write failed", parallelism)
		}
	}
}

// TestShapeSetAsideOnce: workloads of one shape behind a head that does
// not fit are not tried one by one; a smaller one behind them still is.
func TestShapeSetAsideOnce(t *testing.T) {
	pending := []*berthv1alpha1.Workload{mkWL("small", "ns").Queue("q").Created(time.Hour).Request(1, "nvidia.com/gpu", "1").Obj()}
	for i := range 50 {
		pending = append(pending, mkWL(fmt.Sprintf("big-%02d", i), "ns").Queue("q").Created(time.Duration(i)*time.Second).Request(1, "nvidia.com/gpu", "8").Obj())
	}
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Obj()},
		pending: pending,
	})
	got := e.sched.Schedule(context.Background())
	if diff := cmp.Diff(Stats{Admitted: 1, Pending: 1}, got); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if n := len(e.queues.Inadmissible("q")); n != 50 {
		t.Errorf("%d workloads set aside, want the 50 big ones", n)
	}
	// Freed quota re-activates the whole shape: its head is tried again,
	// once.
	e.queues.QueueInadmissible("q")
	if diff := cmp.Diff(Stats{Pending: 1}, e.sched.Schedule(context.Background())); diff != "" {
		t.Errorf("second cycle stats (-want +got):\n%s", diff)
	}
}

// TestRequeuedWhileAssumedIsNotDropped: a workload whose admission write is
// outstanding can be queued again in the same cycle (a newer version of it
// was seen). Popped again, it must wait for the write's answer, not be
// dropped as a stale entry: the write may fail, and nothing would queue it
// again.
func TestRequeuedWhileAssumedIsNotDropped(t *testing.T) {
	w := mkWL("w", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj()
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Obj()},
		pending: []*berthv1alpha1.Workload{w, mkWL("x", "ns").Queue("q").Created(time.Hour).Request(1, "nvidia.com/gpu", "3").Obj()},
	})
	e.applier.failAdmit["ns/w"] = errWrite
	e.applier.onPending = func(key string) {
		if key == "ns/x" {
			newer := w.DeepCopy()
			newer.ResourceVersion = "2"
			_ = e.queues.AddOrUpdateWorkload(newer, "q")
		}
	}
	e.sched.Schedule(context.Background())
	e.applier.onPending = nil
	delete(e.applier.failAdmit, "ns/w")
	e.sched.Schedule(context.Background())
	if _, ok := e.applier.admitted["ns/w"]; !ok {
		t.Errorf("w was not admitted after its failed write; pending %v", e.applier.pending)
	}
}
