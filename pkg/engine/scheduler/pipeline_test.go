package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// gatedApplier holds the admission writes of the workloads it has a gate
// for until the gate is closed, as a slow API server does.
type gatedApplier struct {
	mu     sync.Mutex
	gates  map[string]chan struct{}
	admits []string
}

func (g *gatedApplier) Admit(_ context.Context, wl *berthv1alpha1.Workload, _ *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	g.mu.Lock()
	gate := g.gates[workload.Key(wl)]
	g.admits = append(g.admits, workload.Key(wl))
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return nil, nil
}

func (g *gatedApplier) Preempt(context.Context, *berthv1alpha1.Workload, string, string) error {
	return nil
}

func (g *gatedApplier) SetPending(*berthv1alpha1.Workload, string, string) {}

func (g *gatedApplier) sent() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := slices.Clone(g.admits)
	slices.Sort(out)
	return out
}

// TestCycleStopsDecidingWhenWriteSlotsAreFull: with every write slot
// taken after a round, a cycle starts no other round; it settles its
// writes and the heads left stay queued for the next cycle, which decides
// them on a fresh snapshot.
func TestCycleStopsDecidingWhenWriteSlotsAreFull(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "8")).Obj()},
		pending: []*berthv1alpha1.Workload{
			mkWL("a", "ns").Queue("q").Created(0).Request(1, "nvidia.com/gpu", "1").Obj(),
			mkWL("b", "ns").Queue("q").Created(time.Second).Request(1, "nvidia.com/gpu", "1").Obj(),
			mkWL("c", "ns").Queue("q").Created(2*time.Second).Request(1, "nvidia.com/gpu", "1").Obj(),
		},
	})
	g := &gatedApplier{gates: map[string]chan struct{}{"ns/a": make(chan struct{}), "ns/b": make(chan struct{})}}
	e.sched = New(e.cache, e.queues, g, WithClock(func() time.Time { return utiltesting.BaseTime }), WithParallelism(2))

	select {
	case <-e.queues.Wakeup(): // the workloads' arrival
	default:
	}
	done := make(chan Stats, 1)
	go func() { done <- e.sched.Schedule(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); len(g.sent()) < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	close(g.gates["ns/a"])
	close(g.gates["ns/b"])
	var first Stats
	select {
	case first = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cycle did not end once its writes were answered")
	}
	if got := g.sent(); !cmp.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Errorf("admission writes of the first cycle = %v, want [ns/a ns/b]", got)
	}
	if !e.queues.Queued("ns/c", "q") {
		t.Error("the undecided head ns/c left its queue")
	}
	select {
	case <-e.queues.Wakeup():
	default:
		t.Error("the cycle that stopped early did not ask for the next one")
	}
	second := e.sched.Schedule(context.Background())
	if diff := cmp.Diff([]Stats{{Admitted: 2}, {Admitted: 1}}, []Stats{first, second}); diff != "" {
		t.Errorf("stats per cycle (-want +got):\n%s", diff)
	}
	if got := e.cache.Snapshot().ClusterQueues["q"].Used(resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}); got != 3 {
		t.Errorf("gpus in use = %d, want 3", got)
	}
}
