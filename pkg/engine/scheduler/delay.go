package scheduler

import (
	"fmt"
	"time"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/scheduler/preemption"
)

// A preemptor does not evict at once: for up to the scheduler's preemption
// delay it holds, as a nominee without victims, the quota that running
// workloads free, and evicts only what is still missing when the delay is
// over. Most preemptions on a busy cluster make room that completions
// would have made a moment later: each one throws away the victim's work
// and costs an eviction, a requeue and a second admission. Held, the
// freed quota cannot go to a lower priority, nor be lent, so the preemptor
// gets it first; the delay bounds what it waits for that.
//
// The delay runs from the first cycle in which the head could only fit by
// evicting, and stops when it is admitted or leaves its queue.
type roomWait struct {
	since        time.Time
	clusterQueue berthv1alpha1.ClusterQueueReference
	// woken is set once WakeHeld has re-activated its queue.
	woken bool
}

// WithPreemptionDelay makes a preemptor hold the quota freed for it for up
// to d before it evicts anything; 0, the default, evicts at once.
func WithPreemptionDelay(d time.Duration) Option {
	return func(s *Scheduler) { s.preemptionDelay = d }
}

// holdInstead reports whether e's head, which fits only by evicting some of
// targets, is still within its delay, and if so the message it waits with;
// its first call for a head starts the delay. Targets already being
// evicted cost nothing new: a head that needs only those waits for them
// without a delay.
func (c *cycle) holdInstead(e *entry, targets []preemption.Target) (bool, string) {
	if c.preemptionDelay <= 0 {
		return false, ""
	}
	fresh := 0
	for _, t := range targets {
		if !t.Info.Evicting {
			fresh++
		}
	}
	if fresh == 0 {
		return false, ""
	}
	key := e.head.Info.Key
	w, ok := c.waiting[key]
	if !ok {
		w = roomWait{since: c.now(), clusterQueue: e.head.ClusterQueue}
		c.waiting[key] = w
	}
	deadline := w.since.Add(c.preemptionDelay)
	if !c.now().Before(deadline) {
		return false, ""
	}
	return true, fmt.Sprintf("The workload does not fit; it keeps the quota that running workloads free, and at %s preempts %d of them if not enough is free by then: %s",
		deadline.UTC().Format(time.RFC3339), fresh, e.assignment.Message())
}

// forgetWaits drops the waits of workloads that left their queue (admitted
// elsewhere, deleted, moved) without being admitted by this scheduler.
func (c *cycle) forgetWaits() {
	for key, w := range c.waiting {
		if !c.queues.Queued(key, w.clusterQueue) {
			delete(c.waiting, key)
		}
	}
}

// NextDeadline is when the earliest preemption delay still running ends,
// zero if none runs: the held head must be tried then, event or not.
func (s *Scheduler) NextDeadline() time.Time {
	var next time.Time
	now := s.now()
	for _, w := range s.waiting {
		if d := w.since.Add(s.preemptionDelay); d.After(now) && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// WakeHeld re-activates the queues of the heads whose preemption delay has
// ended, so that they are tried again, now to evict. Start calls it at
// NextDeadline.
func (s *Scheduler) WakeHeld() {
	now := s.now()
	for key, w := range s.waiting {
		if !w.woken && !w.since.Add(s.preemptionDelay).After(now) {
			s.queues.QueueInadmissible(w.clusterQueue)
			w.woken = true
			s.waiting[key] = w
		}
	}
}
