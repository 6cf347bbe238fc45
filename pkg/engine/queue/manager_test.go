package queue

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestOrder(t *testing.T) {
	cases := map[string]struct {
		workloads []*berthv1alpha1.Workload
		// update is applied after all are queued.
		update    *berthv1alpha1.Workload
		deleteKey string
		ordering  workload.Ordering
		wantOrder []string
	}{
		"a workload that timed out goes back by its creation under the Creation timestamp": {
			workloads: []*berthv1alpha1.Workload{
				utiltesting.MakeWorkload("timedout", "ns").Condition(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReadyTimeout, 10*time.Second).Obj(),
				utiltesting.MakeWorkload("other", "ns").Created(5 * time.Second).Obj(),
			},
			ordering:  workload.Ordering{PodsReadyByCreation: true},
			wantOrder: []string{"ns/timedout", "ns/other"},
		},
		"a workload that timed out goes back by its eviction by default": {
			workloads: []*berthv1alpha1.Workload{
				utiltesting.MakeWorkload("timedout", "ns").Condition(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReadyTimeout, 10*time.Second).Obj(),
				utiltesting.MakeWorkload("other", "ns").Created(5 * time.Second).Obj(),
			},
			wantOrder: []string{"ns/other", "ns/timedout"},
		},
		"priority, then queue time, then key": {
			workloads: []*berthv1alpha1.Workload{
				utiltesting.MakeWorkload("late", "ns").Created(2 * time.Second).Obj(),
				utiltesting.MakeWorkload("b", "ns").Created(time.Second).Obj(),
				utiltesting.MakeWorkload("a", "ns").Created(time.Second).Obj(),
				utiltesting.MakeWorkload("high", "ns").Created(3 * time.Second).Priority(5).Obj(),
			},
			wantOrder: []string{"ns/high", "ns/a", "ns/b", "ns/late"},
		},
		"evicted workload re-enters at its eviction time": {
			workloads: []*berthv1alpha1.Workload{
				utiltesting.MakeWorkload("evicted", "ns").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 10*time.Second).Obj(),
				utiltesting.MakeWorkload("other", "ns").Created(5 * time.Second).Obj(),
			},
			wantOrder: []string{"ns/other", "ns/evicted"},
		},
		"priority change moves a workload at once": {
			workloads: []*berthv1alpha1.Workload{
				utiltesting.MakeWorkload("a", "ns").Obj(),
				utiltesting.MakeWorkload("b", "ns").Created(time.Second).Obj(),
			},
			update:    utiltesting.MakeWorkload("b", "ns").Created(time.Second).Priority(100).Obj(),
			wantOrder: []string{"ns/b", "ns/a"},
		},
		"delete": {
			workloads: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("a", "ns").Obj(), utiltesting.MakeWorkload("b", "ns").Obj()},
			deleteKey: "ns/a",
			wantOrder: []string{"ns/b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewManager()
			m.SetOrdering(tc.ordering)
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
			for _, w := range tc.workloads {
				if err := m.AddOrUpdateWorkload(w, "q"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.update != nil {
				_ = m.AddOrUpdateWorkload(tc.update, "q")
			}
			if tc.deleteKey != "" {
				m.DeleteWorkload(tc.deleteKey)
			}
			if diff := cmp.Diff(tc.wantOrder, m.Order("q")); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			var popped []string
			for {
				heads := m.Heads(nil, nil)
				if len(heads) == 0 {
					break
				}
				popped = append(popped, heads[0].Info.Key)
			}
			if diff := cmp.Diff(tc.wantOrder, popped); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequeue(t *testing.T) {
	cases := map[string]struct {
		strategy         berthv1alpha1.QueueingStrategy
		reason           RequeueReason
		eventDuringCycle bool
		eventAfter       string
		wantOrder        []string
		wantInadmissible []string
	}{
		"BestEffortFIFO sets aside": {
			strategy: berthv1alpha1.BestEffortFIFO, reason: RequeueInadmissible,
			wantOrder: []string{}, wantInadmissible: []string{"ns/a"},
		},
		"StrictFIFO keeps the head": {
			strategy: berthv1alpha1.StrictFIFO, reason: RequeueInadmissible,
			wantOrder: []string{"ns/a"}, wantInadmissible: []string{},
		},
		"an event during the cycle is not lost": {
			strategy: berthv1alpha1.BestEffortFIFO, reason: RequeueInadmissible, eventDuringCycle: true,
			wantOrder: []string{"ns/a"}, wantInadmissible: []string{},
		},
		"an event in the cohort re-activates": {
			strategy: berthv1alpha1.BestEffortFIFO, reason: RequeueInadmissible, eventAfter: "other",
			wantOrder: []string{"ns/a"}, wantInadmissible: []string{},
		},
		"an event in another cohort does not": {
			strategy: berthv1alpha1.BestEffortFIFO, reason: RequeueInadmissible, eventAfter: "stranger",
			wantOrder: []string{}, wantInadmissible: []string{"ns/a"},
		},
		"waiting preemptor stays active": {
			strategy: berthv1alpha1.BestEffortFIFO, reason: RequeueWaiting,
			wantOrder: []string{"ns/a"}, wantInadmissible: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewManager()
			m.AddOrUpdateCohort(utiltesting.MakeCohort("child").Parent("root").Obj())
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Cohort("child").Strategy(tc.strategy).Obj())
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("other").Cohort("root").Obj())
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("stranger").Cohort("elsewhere").Obj())
			_ = m.AddOrUpdateWorkload(utiltesting.MakeWorkload("a", "ns").Obj(), "q")
			heads := m.Heads(nil, nil)
			if tc.eventDuringCycle {
				m.QueueInadmissible("q")
			}
			m.Requeue(heads[0], tc.reason)
			if tc.eventAfter != "" {
				m.QueueInadmissible(berthv1alpha1.ClusterQueueReference(tc.eventAfter))
			}
			if diff := cmp.Diff(tc.wantOrder, m.Order("q"), cmpEmptySlice); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantInadmissible, m.Inadmissible("q"), cmpEmptySlice); diff != "" {
				t.Errorf("inadmissible (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusOnlyUpdateDoesNotReactivate(t *testing.T) {
	m := NewManager()
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
	w := utiltesting.MakeWorkload("a", "ns").Obj()
	_ = m.AddOrUpdateWorkload(w, "q")
	m.Requeue(m.Heads(nil, nil)[0], RequeueInadmissible)
	pendingMsg := utiltesting.MakeWorkload("a", "ns").Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
	_ = m.AddOrUpdateWorkload(pendingMsg, "q")
	if diff := cmp.Diff([]string{"ns/a"}, m.Inadmissible("q")); diff != "" {
		t.Errorf("inadmissible after a status update (-want +got):\n%s", diff)
	}
	_ = m.AddOrUpdateWorkload(utiltesting.MakeWorkload("a", "ns").Priority(3).Obj(), "q")
	if diff := cmp.Diff([]string{"ns/a"}, m.Order("q")); diff != "" {
		t.Errorf("order after a priority change (-want +got):\n%s", diff)
	}
}

// TestEventsFollowTheCohortTree checks that an event re-activates the
// queues of the cohort tree as it is now, after queues and cohorts moved
// since the last event.
func TestEventsFollowTheCohortTree(t *testing.T) {
	cases := map[string]struct {
		move func(m *Manager)
		// waiting is the queue whose workload waits; event gets the event.
		waiting, event berthv1alpha1.ClusterQueueReference
	}{
		"a queue moved to another cohort": {
			move: func(m *Manager) {
				m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Cohort("elsewhere").Obj())
			},
			waiting: "q", event: "stranger",
		},
		"a cohort moved under another root": {
			move: func(m *Manager) {
				m.AddOrUpdateCohort(utiltesting.MakeCohort("elsewhere").Parent("root").Obj())
			},
			waiting: "stranger", event: "other",
		},
		"a queue deleted and added again": {
			move: func(m *Manager) {
				m.DeleteClusterQueue("q")
				m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Cohort("child").Obj())
			},
			waiting: "q", event: "other",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewManager()
			m.AddOrUpdateCohort(utiltesting.MakeCohort("child").Parent("root").Obj())
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Cohort("child").Obj())
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("other").Cohort("root").Obj())
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("stranger").Cohort("elsewhere").Obj())
			// An event in each tree before the move.
			m.QueueInadmissible("other")
			m.QueueInadmissible("stranger")
			tc.move(m)
			_ = m.AddOrUpdateWorkload(utiltesting.MakeWorkload("a", "ns").Obj(), tc.waiting)
			m.Requeue(m.Heads(nil, nil)[0], RequeueInadmissible)
			if diff := cmp.Diff([]string{"ns/a"}, m.Inadmissible(tc.waiting)); diff != "" {
				t.Fatalf("inadmissible before the event (-want +got):\n%s", diff)
			}
			m.QueueInadmissible(tc.event)
			if diff := cmp.Diff([]string{"ns/a"}, m.Order(tc.waiting)); diff != "" {
				t.Errorf("order after an event in %s (-want +got):\n%s", tc.event, diff)
			}
		})
	}
}

var cmpEmptySlice = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

// TestActivationAfterMarkIsNotLost is the race of a cycle whose snapshot
// predates a release of quota that happened before its heads were popped:
// the head that did not fit on the old snapshot must be tried again.
func TestActivationAfterMarkIsNotLost(t *testing.T) {
	cases := map[string]struct {
		activateAfterMark bool
		wantOrder         []string
		wantInadmissible  []string
	}{
		"no event since the mark": {wantInadmissible: []string{"ns/a"}},
		"an event after the mark": {activateAfterMark: true, wantOrder: []string{"ns/a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewManager()
			m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
			_ = m.AddOrUpdateWorkload(utiltesting.MakeWorkload("a", "ns").Obj(), "q")
			mark := m.Mark()
			if tc.activateAfterMark {
				m.QueueInadmissible("q")
			}
			m.Requeue(m.Heads(nil, mark)[0], RequeueInadmissible)
			if diff := cmp.Diff(tc.wantOrder, m.Order("q"), cmpEmptySlice); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantInadmissible, m.Inadmissible("q"), cmpEmptySlice); diff != "" {
				t.Errorf("inadmissible (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShapeBuckets: a head that does not fit sets aside the workloads of
// its shape queued behind it, not the others; a new workload of the shape
// stays aside unless it goes ahead of the head that did not fit.
func TestShapeBuckets(t *testing.T) {
	m := NewManager()
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
	big := func(name string, created time.Duration, prio int32) *berthv1alpha1.Workload {
		return utiltesting.MakeWorkload(name, "ns").Created(created).Priority(prio).Request(1, "cpu", "8").Obj()
	}
	_ = m.AddOrUpdateWorkload(big("big-1", 1*time.Second, 0), "q")
	_ = m.AddOrUpdateWorkload(big("big-2", 2*time.Second, 0), "q")
	_ = m.AddOrUpdateWorkload(utiltesting.MakeWorkload("small", "ns").Created(3*time.Second).Request(1, "cpu", "1").Obj(), "q")
	h := m.Heads(nil, nil)[0]
	m.Park(h)
	if next := m.Heads(nil, nil); len(next) != 1 || next[0].Info.Key != "ns/small" {
		t.Fatalf("next head after parking big-1 = %v, want ns/small", next)
	} else {
		m.Done(next[0])
	}
	// After an event, a failing head does not park its bucket.
	m.QueueInadmissible("q")
	m.Requeue(h, RequeueInadmissible)
	m.EndCycle()
	if diff := cmp.Diff([]string{"ns/big-1", "ns/big-2"}, m.Order("q"), cmpEmptySlice); diff != "" {
		t.Errorf("order after a cycle that saw an event (-want +got):\n%s", diff)
	}
	h = m.Heads(nil, nil)[0]
	m.Park(h)
	m.Requeue(h, RequeueInadmissible)
	m.EndCycle()
	_ = m.AddOrUpdateWorkload(big("big-3", 3*time.Second, 0), "q")
	if diff := cmp.Diff([]string{"ns/big-1", "ns/big-2", "ns/big-3"}, m.Inadmissible("q")); diff != "" {
		t.Errorf("set aside (-want +got):\n%s", diff)
	}
	_ = m.AddOrUpdateWorkload(big("urgent", 4*time.Second, 5), "q")
	if diff := cmp.Diff([]string{"ns/urgent", "ns/big-1", "ns/big-2", "ns/big-3"}, m.Order("q"), cmpEmptySlice); diff != "" {
		t.Errorf("order after a higher-priority workload of the shape (-want +got):\n%s", diff)
	}
}

// TestStaleParkIsForTheCycleOnly: a head that did not fit on a snapshot
// older than an event parks its shape for the rest of the cycle all the
// same, but nothing is set aside: the next cycle tries them again.
func TestStaleParkIsForTheCycleOnly(t *testing.T) {
	m := NewManager()
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
	for i, name := range []string{"big-1", "big-2"} {
		_ = m.AddOrUpdateWorkload(utiltesting.MakeWorkload(name, "ns").Created(time.Duration(i)*time.Second).Request(1, "cpu", "8").Obj(), "q")
	}
	mark := m.Mark()
	m.QueueInadmissible("q")
	h := m.Heads(nil, mark)[0]
	m.Park(h)
	if next := m.Heads(nil, mark); len(next) != 0 {
		t.Errorf("heads after parking on a stale snapshot = %v, want none this cycle", next)
	}
	m.Requeue(h, RequeueInadmissible)
	m.EndCycle()
	if diff := cmp.Diff([]string{"ns/big-1", "ns/big-2"}, m.Order("q"), cmpEmptySlice); diff != "" {
		t.Errorf("order for the next cycle (-want +got):\n%s", diff)
	}
}

// TestBehindToldOnce: workloads set aside behind the head of their shape
// are handed over once each, with that head, whether they were queued
// before the head failed or joined after.
func TestBehindToldOnce(t *testing.T) {
	m := NewManager()
	var told []string
	m.OnBehind(func(bs []Behind) {
		for _, b := range bs {
			told = append(told, b.Workload.Name+"<"+b.Head.Name)
		}
	})
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
	big := func(name string, created time.Duration) *berthv1alpha1.Workload {
		return utiltesting.MakeWorkload(name, "ns").Created(created).Request(1, "cpu", "8").Obj()
	}
	_ = m.AddOrUpdateWorkload(big("big-1", time.Second), "q")
	_ = m.AddOrUpdateWorkload(big("big-2", 2*time.Second), "q")
	for i := range 2 {
		if i > 0 {
			// An event: big-1 is tried again, big-2 is not told twice.
			m.QueueInadmissible("q")
		}
		h := m.Heads(nil, nil)[0]
		m.Park(h)
		m.Requeue(h, RequeueInadmissible)
		m.EndCycle()
	}
	_ = m.AddOrUpdateWorkload(big("big-3", 3*time.Second), "q")
	if diff := cmp.Diff([]string{"big-2<big-1", "big-3<big-1"}, told); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
}

// TestStrictFIFOTellsEveryoneBehind: behind the head of a StrictFIFO queue
// that does not fit, every workload waits untried, whatever its shape, and
// is told so once.
func TestStrictFIFOTellsEveryoneBehind(t *testing.T) {
	m := NewManager()
	var told []string
	m.OnBehind(func(bs []Behind) {
		for _, b := range bs {
			told = append(told, fmt.Sprintf("%s<%s strict=%v", b.Workload.Name, b.Head.Name, b.Strict))
		}
	})
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Strategy(berthv1alpha1.StrictFIFO).Obj())
	wl := func(name string, created time.Duration, cpu string) *berthv1alpha1.Workload {
		return utiltesting.MakeWorkload(name, "ns").Created(created).Request(1, "cpu", cpu).Obj()
	}
	_ = m.AddOrUpdateWorkload(wl("head", time.Second, "8"), "q")
	_ = m.AddOrUpdateWorkload(wl("same", 2*time.Second, "8"), "q")
	_ = m.AddOrUpdateWorkload(wl("small", 3*time.Second, "1"), "q")
	for range 2 {
		h := m.Heads(nil, nil)[0]
		if h.Info.Obj.Name != "head" {
			t.Fatalf("head %s, want the oldest", h.Info.Obj.Name)
		}
		m.Requeue(h, RequeueInadmissible)
		m.EndCycle()
	}
	slices.Sort(told)
	if diff := cmp.Diff([]string{"same<head strict=true", "small<head strict=true"}, told); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
}

// BenchmarkQueueInadmissible is the event of a finished workload in the
// large scenario's topology: 1,000 ClusterQueues in 10 cohorts.
func BenchmarkQueueInadmissible(b *testing.B) {
	m := NewManager()
	for i := range 1000 {
		cohort := fmt.Sprintf("cohort-%d", i/100)
		m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue(fmt.Sprintf("cq-%04d", i)).Cohort(cohort).Obj())
	}
	i := 0
	for b.Loop() {
		m.QueueInadmissible(berthv1alpha1.ClusterQueueReference(fmt.Sprintf("cq-%04d", i%1000)))
		i += 37
	}
}
