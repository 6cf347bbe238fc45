package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/pkg/workload"
)

// gatedApplier holds the admission writes of the workloads it has a gate
// for until the gate is closed, as a slow API server does.
type gatedApplier struct {
	mu        sync.Mutex
	gates     map[string]chan struct{}
	admits    []string
	preempted []string
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

func (g *gatedApplier) Preempt(_ context.Context, wl *berthv1alpha1.Workload, _, _ string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.preempted = append(g.preempted, workload.Key(wl))
	return nil
}

func (g *gatedApplier) SetPending(*berthv1alpha1.Workload, string, string) {}

func (g *gatedApplier) seen() ([]string, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.admits...), append([]string(nil), g.preempted...)
}

// withGates rebuilds e's scheduler with two write slots and an applier
// that holds the admissions of keys.
func withGates(e *env, keys ...string) *gatedApplier {
	g := &gatedApplier{gates: map[string]chan struct{}{}}
	for _, k := range keys {
		g.gates[k] = make(chan struct{})
	}
	e.sched = New(e.cache, e.queues, g, WithClock(func() time.Time { return utiltesting.BaseTime }), WithParallelism(2))
	return g
}

// scheduleWithin runs a cycle, failing the test if it does not end soon:
// a cycle must not wait for unanswered writes.
func scheduleWithin(t *testing.T, s *Scheduler) Stats {
	t.Helper()
	done := make(chan Stats, 1)
	go func() { done <- s.Schedule(context.Background()) }()
	select {
	case st := <-done:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("the cycle waited for unanswered writes")
		return Stats{}
	}
}

// TestCycleEndsWhenWriteSlotsAreFull: with every write slot taken, a cycle
// ends rather than wait, and the heads it did not decide stay queued for
// the next cycle, which settles the answered writes first.
func TestCycleEndsWhenWriteSlotsAreFull(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "8")).Obj()},
		pending: []*berthv1alpha1.Workload{
			mkWL("a", "ns").Queue("q").Created(0).Request(1, "nvidia.com/gpu", "1").Obj(),
			mkWL("b", "ns").Queue("q").Created(time.Second).Request(1, "nvidia.com/gpu", "1").Obj(),
			mkWL("c", "ns").Queue("q").Created(2*time.Second).Request(1, "nvidia.com/gpu", "1").Obj(),
		},
	})
	g := withGates(e, "ns/a", "ns/b")
	first := scheduleWithin(t, e.sched)
	if !e.sched.stalled {
		t.Error("the cycle did not report that it stalled on full write slots")
	}
	var admits []string
	for deadline := time.Now().Add(10 * time.Second); len(admits) < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		admits, _ = g.seen()
	}
	slices.Sort(admits)
	if !cmp.Equal(admits, []string{"ns/a", "ns/b"}) {
		t.Errorf("admission writes sent = %v, want [ns/a ns/b]", admits)
	}
	if !e.queues.Queued("ns/c", "q") {
		t.Error("the undecided head ns/c left its queue")
	}
	close(g.gates["ns/a"])
	close(g.gates["ns/b"])
	e.sched.writes.Wait()
	second := scheduleWithin(t, e.sched)
	e.sched.writes.Wait()
	third := scheduleWithin(t, e.sched)
	// a and b are settled by the second cycle, which sends c's write; the
	// third settles it.
	if diff := cmp.Diff([]Stats{{}, {Admitted: 2}, {Admitted: 1}}, []Stats{first, second, third}); diff != "" {
		t.Errorf("stats per cycle (-want +got):\n%s", diff)
	}
	if got := e.cache.Snapshot().ClusterQueues["q"].Used(resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}); got != 3 {
		t.Errorf("gpus in use = %d, want 3", got)
	}
}

// TestUnansweredAdmissionIsNoVictim: a workload whose admission write is
// not answered holds its quota, and is not preempted until it is.
func TestUnansweredAdmissionIsNoVictim(t *testing.T) {
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues: []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).
			Preemption(berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority}).Obj()},
		pending: []*berthv1alpha1.Workload{mkWL("low", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj()},
	})
	g := withGates(e, "ns/low")
	scheduleWithin(t, e.sched)
	high := mkWL("high", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()
	if err := e.queues.AddOrUpdateWorkload(high, "q"); err != nil {
		t.Fatal(err)
	}
	scheduleWithin(t, e.sched)
	if _, preempted := g.seen(); len(preempted) != 0 {
		t.Errorf("preempted %v before its admission was answered", preempted)
	}
	close(g.gates["ns/low"])
	e.sched.writes.Wait()
	e.queues.QueueInadmissible("q")
	scheduleWithin(t, e.sched)
	if _, preempted := g.seen(); !cmp.Equal(preempted, []string{"ns/low"}) {
		t.Errorf("preempted %v once the admission was answered, want [ns/low]", preempted)
	}
}
