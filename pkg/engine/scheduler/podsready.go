package scheduler

import (
	"fmt"

	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
)

// WithBlockAdmission makes the scheduler admit nothing while the pods of a
// workload holding quota are not all ready (waitForPodsReady.blockAdmission):
// pods that a scheduler places one at a time cannot then leave two gangs
// each holding part of the nodes the other needs. It has the cache track
// readiness, and wakes the queues when the last workload is ready.
func WithBlockAdmission() Option {
	return func(s *Scheduler) { s.blockAdmission = true }
}

// trackReadiness sets up what WithBlockAdmission needs of the cache.
func trackReadiness(c *cache.Cache, q *queue.Manager) {
	c.TrackPodsReady(q.Wake)
}

// readinessBlock says why no head may be admitted now, if that is so: the
// pods of workloads admitted before are not all ready.
func (c *cycle) readinessBlock() string {
	if !c.blockAdmission {
		return ""
	}
	n, first := c.cache.NotReady()
	if n == 0 {
		return ""
	}
	c.readinessBlocked = true
	return fmt.Sprintf("Waiting for the pods of %d admitted workload(s), %s first, to be ready: with waitForPodsReady.blockAdmission nothing is admitted until they are, or their timeout evicts them", n, first)
}
