package scheduler

import (
	"context"
	"sync"
	"time"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// The preemption delay counts only the time in which the API server
// answers. While it is overloaded (a flood of creations, say), the writes
// that finish workloads reach Berth late or not at all: a preemptor would
// see its quota still held by workloads that have ended, and evict ones
// that are still running, only because their completions had not got
// through. So the time during which the scheduler's own writes waited for
// longer than stallAfter is added to the delay: a preemptor keeps holding
// freed quota through a stall, and evicts only once the delay has run in
// time the cluster could have used to free it.
//
// In one baseline run of the benchmark, every eviction was decided while
// the API server took the scenario's 400 creations a second and the
// admissions fell tenfold (test/performance/scheduler/RESULTS.md, "Where
// the baseline's evictions happen").

// stallAfter is how long a write may wait for its answer before the API
// server counts as stalled: a healthy one answers within milliseconds.
const stallAfter = time.Second

// stalls records the stretches of time in which a write of the scheduler
// had waited for longer than stallAfter. It is safe for concurrent use:
// writes go out from several goroutines.
type stalls struct {
	mu sync.Mutex
	// spans are disjoint and ordered.
	spans []span
}

type span struct{ from, to time.Time }

// wrote records a write that went out at start and was answered at end.
func (s *stalls) wrote(start, end time.Time) {
	from := start.Add(stallAfter)
	if !end.After(from) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Merge the new span with those it overlaps; writes end in about the
	// order they start, so it is usually the last one.
	i := len(s.spans)
	for i > 0 && !s.spans[i-1].to.Before(from) {
		i--
	}
	merged := span{from: from, to: end}
	j := i
	for ; j < len(s.spans) && !s.spans[j].from.After(merged.to); j++ {
		if s.spans[j].from.Before(merged.from) {
			merged.from = s.spans[j].from
		}
		if s.spans[j].to.After(merged.to) {
			merged.to = s.spans[j].to
		}
	}
	s.spans = append(s.spans[:i], append([]span{merged}, s.spans[j:]...)...)
}

// since is how much of the time from t on was stalled.
func (s *stalls) since(t time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d time.Duration
	for _, sp := range s.spans {
		if sp.to.After(t) {
			from := sp.from
			if from.Before(t) {
				from = t
			}
			d += sp.to.Sub(from)
		}
	}
	return d
}

// forgetBefore drops the stalls that ended before t, which no delay still
// running can count.
func (s *stalls) forgetBefore(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.spans) && s.spans[i].to.Before(t) {
		i++
	}
	s.spans = append(s.spans[:0], s.spans[i:]...)
}

// timedApplier is an Applier whose admissions and evictions are timed into
// stalls, with the scheduler's clock.
type timedApplier struct {
	Applier
	stalls *stalls
	now    func() time.Time
}

func (a timedApplier) Admit(ctx context.Context, wl *berthv1alpha1.Workload, admission *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	start := a.now()
	defer func() { a.stalls.wrote(start, a.now()) }()
	return a.Applier.Admit(ctx, wl, admission)
}

func (a timedApplier) Preempt(ctx context.Context, victim *berthv1alpha1.Workload, reason, message string) error {
	start := a.now()
	defer func() { a.stalls.wrote(start, a.now()) }()
	return a.Applier.Preempt(ctx, victim, reason, message)
}
