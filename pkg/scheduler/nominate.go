package scheduler

import (
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/resources"
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
type nomination struct {
	clusterQueue berthv1alpha1.ClusterQueueReference
	usage        resources.Usage
}

// applyNominations adds the reservations still standing to the cycle's
// snapshot. A nominee that is no longer queued (deleted, admitted
// elsewhere, moved) gives its reservation up.
func (c *cycle) applyNominations() {
	for key, n := range c.nominated {
		cq := c.snap.ClusterQueues[n.clusterQueue]
		if cq == nil || !c.queues.Queued(key, n.clusterQueue) {
			delete(c.nominated, key)
			continue
		}
		cq.Reserve(n.usage)
	}
}

// release gives up key's reservation, if any, before it is decided again.
func (c *cycle) release(key string) {
	if n, ok := c.nominated[key]; ok {
		delete(c.nominated, key)
		if cq := c.snap.ClusterQueues[n.clusterQueue]; cq != nil {
			cq.Unreserve(n.usage)
		}
	}
}

// reserve nominates e's head, which made room by preemption and waits for
// it, for the rest of the cycle and the next ones.
func (c *cycle) reserve(e *entry) {
	u := e.assignment.Usage
	c.nominated[e.head.Info.Key] = nomination{clusterQueue: e.head.ClusterQueue, usage: u}
	e.cq.Reserve(u)
}
