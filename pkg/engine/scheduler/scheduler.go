package scheduler

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
)

// Scheduler runs admission cycles over a cache and a queue manager.
type Scheduler struct {
	cache   *cache.Cache
	queues  *queue.Manager
	applier Applier
	now     func() time.Time
	// parallelism is how many admission writes go out at once.
	parallelism int
	// nominated are the preemptors waiting for their victims, by key.
	nominated map[string]*nomination
	// observe, when set, is told of each cycle of Start.
	observe func(Stats, time.Duration)
	// fairSharing orders a round's borrowing heads by the shares their
	// queues would have with them, and lets them preempt by the shares,
	// by fairStrategies.
	fairSharing    bool
	fairStrategies []configv1alpha1.PreemptionStrategy
	// preemptionDelay is how long a preemptor holds freed quota before it
	// evicts; waiting are the heads doing so, by key (see roomWait).
	preemptionDelay time.Duration
	waiting         map[string]roomWait
	// blockAdmission admits nothing while the pods of an admitted
	// workload are not all ready.
	blockAdmission bool
}

// Option configures a Scheduler.
type Option func(*Scheduler)

// WithClock sets the clock used to stamp assumed admissions.
func WithClock(now func() time.Time) Option {
	return func(s *Scheduler) { s.now = now }
}

// WithParallelism sets how many admission writes of a round go out at
// once; 1, the default, writes them one after another.
func WithParallelism(n int) Option {
	return func(s *Scheduler) { s.parallelism = n }
}

// WithCycleObserver has f told of every cycle Start runs: its decisions
// and how long it took. f must not block.
func WithCycleObserver(f func(Stats, time.Duration)) Option {
	return func(s *Scheduler) { s.observe = f }
}

// WithFairSharing orders the heads of a round that borrow by the weighted
// shares their queues would have once they are admitted, lowest first, and
// lets a head that would borrow preempt another queue's borrowed workloads
// by the given strategies, tried in order (by default
// LessThanOrEqualToFinalShare, then LessThanInitialShare).
func WithFairSharing(strategies ...configv1alpha1.PreemptionStrategy) Option {
	if len(strategies) == 0 {
		strategies = []configv1alpha1.PreemptionStrategy{configv1alpha1.LessThanOrEqualToFinalShare, configv1alpha1.LessThanInitialShare}
	}
	return func(s *Scheduler) { s.fairSharing, s.fairStrategies = true, strategies }
}

// New returns a Scheduler.
func New(c *cache.Cache, q *queue.Manager, a Applier, opts ...Option) *Scheduler {
	s := &Scheduler{cache: c, queues: q, applier: a, now: time.Now, parallelism: 1, nominated: map[string]*nomination{}, waiting: map[string]roomWait{}}
	for _, o := range opts {
		o(s)
	}
	if s.blockAdmission {
		trackReadiness(c, q)
	}
	return s
}

// retryAllEvery is how often every set-aside workload is tried again,
// event or not: a backstop, like kube-scheduler's flush of unschedulable
// pods, so that no missed event can leave a workload waiting for good.
const retryAllEvery = 30 * time.Second

// Start runs a cycle whenever the queue manager signals work, until ctx is
// done. Between events it waits, except for the retryAllEvery backstop.
func (s *Scheduler) Start(ctx context.Context) {
	log := logr.FromContextOrDiscard(ctx)
	retryAll := time.NewTicker(retryAllEvery)
	defer retryAll.Stop()
	// held fires when a preemption delay ends, so that the head holding
	// quota is tried again whether or not anything else happens.
	held := time.NewTimer(time.Hour)
	held.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retryAll.C:
			s.queues.QueueAllInadmissible()
			continue
		case <-held.C:
			s.WakeHeld()
			continue
		case <-s.queues.Wakeup():
		}
		start := time.Now()
		stats := s.Schedule(ctx)
		took := time.Since(start)
		log.V(2).Info("Scheduling cycle", "admitted", stats.Admitted, "preempted", stats.Preempted, "pending", stats.Pending, "duration", took)
		if s.observe != nil {
			s.observe(stats, took)
		}
		if next := s.NextDeadline(); !next.IsZero() {
			held.Reset(max(time.Until(next), 0) + time.Millisecond)
		}
	}
}

// Stats counts the decisions of one cycle.
type Stats struct {
	Admitted  int
	Preempted int
	Pending   int
}
