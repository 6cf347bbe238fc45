package scheduler

import (
	"maps"
	"slices"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// A nomination reserves, from one cycle to the next, the quota a preemptor
// waits for, as kube-scheduler's nominated node does for a preempting pod.
// Its victims release their quota one by one, each when its eviction is
// written and seen. Without the reservation, what the first releases is
// free: another queue borrows it, the preemptor still does not fit, and
// it preempts again, now the borrower, and so on. With it, the quota a
// preemptor needs counts as used for every head but the preemptor itself.
// A reservation never admits anything, so it cannot overcommit; it only
// holds quota back until the preemptor is popped again and decides anew.
//
// The reservation is never more than the preemptor's queue could take
// now: what the victims still hold is in use already, and counted twice it
// would take from the cohort the quota other queues may use meanwhile, so
// that a queue reclaiming its own quota would wait on a reservation for
// room the victims occupy. Nor does it count what victims in the
// preemptor's own queue still hold, which they free for it alone. It does
// take quota that is free already: the victims of other queues may give
// back less than they hold (a lending limit keeps part of it theirs), and
// the preemptor then needs the free quota too; left to another borrower,
// it would make the preemptor evict again. The reservation grows as the
// victims release.
//
// The reservation stands until the round in which the nominee is decided
// again. In that round it goes before the other heads that, like it,
// borrow, or, like it, do not, whatever their priority: the room its
// victims gave up is its own.
type nomination struct {
	clusterQueue berthv1alpha1.ClusterQueueReference
	// want is what the preemptor needs.
	want    resources.Usage
	victims []victim
	// held is what is reserved in the current snapshot.
	held resources.Usage
}

// victim is a workload a nominee preempted, in the queue it holds quota in.
type victim struct {
	key          string
	clusterQueue berthv1alpha1.ClusterQueueReference
}

// toHold is what n must hold back now: what it wants, less what its
// victims in its own queue still hold, and no more than its queue could
// take now.
func (c *cycle) toHold(n *nomination) resources.Usage {
	cq := c.snap.ClusterQueues[n.clusterQueue]
	out := make(resources.Usage, len(n.want))
	for fr, v := range n.want {
		out[fr] = v
	}
	for _, vic := range n.victims {
		if vic.clusterQueue != n.clusterQueue {
			continue
		}
		for fr, v := range c.snap.Held(vic.clusterQueue, vic.key) {
			if r, ok := out[fr]; ok {
				out[fr] = max(0, r-v)
			}
		}
	}
	for fr, v := range out {
		out[fr] = min(v, cq.Available(fr))
	}
	return out
}

// applyNominations adds the reservations still standing to the cycle's
// snapshot. A nominee that is no longer queued (deleted, admitted
// elsewhere, moved) gives its reservation up, and so does one that a
// workload of higher priority overtook, at the head of its bucket or of
// its StrictFIFO queue: the nominee is not tried until that one goes, and
// its reservation would keep that one from going. As with kube-scheduler's
// nominated pods, the room goes to the higher priority; the nominee makes
// room again when its turn comes.
//
// They are applied in the order of their keys: a reservation takes free
// quota, so what one holds depends on those applied before it, and the
// same state must give the same decisions.
func (c *cycle) applyNominations() {
	for _, key := range slices.Sorted(maps.Keys(c.nominated)) {
		n := c.nominated[key]
		cq := c.snap.ClusterQueues[n.clusterQueue]
		if cq == nil || !c.queues.Queued(key, n.clusterQueue) || c.queues.Overtaken(key, n.clusterQueue) {
			delete(c.nominated, key)
			// Its preemption delay starts again when it is the one that
			// needs room again: the time it waited behind a higher
			// priority was not spent waiting for room.
			delete(c.waiting, key)
			c.freed(n)
			continue
		}
		n.held = c.toHold(n)
		cq.Reserve(n.held)
	}
}

// release gives up key's reservation, if any, before it is decided again,
// and returns it.
func (c *cycle) release(key string) *nomination {
	n, ok := c.nominated[key]
	if !ok {
		return nil
	}
	delete(c.nominated, key)
	if cq := c.snap.ClusterQueues[n.clusterQueue]; cq != nil {
		cq.Unreserve(n.held)
	}
	return n
}

// freed tells the queues that n's reservation is given up for good: the
// workloads of its cohort tree that were set aside while it held quota
// back may fit now.
func (c *cycle) freed(n *nomination) {
	for _, v := range n.held {
		if v > 0 {
			c.queues.QueueInadmissible(n.clusterQueue)
			return
		}
	}
}

// reserve nominates e's head, which made room by preempting victims and
// waits for it, for the rest of the cycle and the next ones.
func (c *cycle) reserve(e *entry, victims []victim) {
	n := &nomination{clusterQueue: e.head.ClusterQueue, want: e.assignment.Usage, victims: victims}
	n.held = c.toHold(n)
	c.nominated[e.head.Info.Key] = n
	e.cq.Reserve(n.held)
}
