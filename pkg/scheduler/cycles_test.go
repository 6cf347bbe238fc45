package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestFailedWriteIsForgottenAndRetried(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Obj()},
		pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj()},
	})
	e.applier.failAdmit["ns/a"] = true
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

func (n notifyApplier) Admit(ctx context.Context, wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission) error {
	n.admitted <- wl.Namespace + "/" + wl.Name
	return nil
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
