package scheduler

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/scheduler/flavorassigner"
	"github.com/berth-dev/berth/pkg/engine/scheduler/preemption"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// preempt handles a head that fits only by preempting. The preemptor is
// not admitted in this cycle: it waits for its victims to release their
// quota. The victims keep their usage in the snapshot, marked evicting, so
// no later head of the cycle overcommits; they are claimed, so no later
// preemptor of the cycle counts on the same room.
func (c *cycle) preempt(ctx context.Context, e *entry) {
	info := e.head.Info
	if first, ok := c.preemptor[e.head.ClusterQueue]; ok {
		// One preemptor per queue and cycle. Each head of a queue below
		// its nominal quota would otherwise reclaim in turn, and the
		// lower ones would be preempted by the higher as soon as admitted.
		msg := fmt.Sprintf("The workload does not fit; workload %s, ahead of it in the ClusterQueue, is making room first: %s", first, e.assignment.Message())
		c.pending(ctx, e, berthv1alpha1.ReasonPending, msg, queue.RequeueWaiting)
		return
	}
	targets, late := preemption.FindTargets(c.snap, e.cq, info, e.assignment)
	if late {
		msg := "The workload does not fit; it chooses whom to preempt in the next cycle, when the workloads admitted in this one can be chosen too: " + e.assignment.Message()
		c.pending(ctx, e, berthv1alpha1.ReasonPending, msg, queue.RequeueRetry)
		return
	}
	if log := logr.FromContextOrDiscard(ctx).V(2); log.Enabled() {
		for _, t := range targets {
			log.Info("Preemption target", "preemptor", info.Key, "target", t.Info.Key, "evicting", t.Info.Evicting, "reason", t.Reason)
		}
	}
	if len(targets) == 0 {
		if a := flavorassigner.AssignWithoutPreemption(c.snap, e.cq, info); a.Mode >= flavorassigner.Borrow {
			// A later flavor has room.
			e.assignment = a
			c.admit(ctx, e)
			return
		}
		msg := "The workload does not fit, and no workload may be preempted to make room: " + e.assignment.Message()
		c.pending(ctx, e, berthv1alpha1.ReasonPending, msg, queue.RequeueInadmissible)
		return
	}
	c.preemptor[e.head.ClusterQueue] = info.Key
	if d := e.assignment.Defrag; d != nil && d.Planned != nil {
		// The domain its victims free is its own: no later head of the
		// cycle takes the room left there.
		c.snap.Reserve(d.Flavor, d.Planned, workload.PodWithRequests(podSetRequest(info, d.PodSet)))
	}
	if hold, msg := c.holdInstead(e, targets); hold {
		// A later flavor may have room, but whenCanPreempt: MayStopSearch
		// prefers this one at the cost of an eviction (a team that lent
		// its H100s gets them back, not A100s instead): the delay decides
		// when to evict, never where the workload runs.
		// It stays at the head of its queue, tried again at every cycle
		// (Start also wakes its queue when the delay ends), so that it
		// takes freed quota as soon as it is enough.
		c.reserve(e, nil)
		if e.cq.QueueingStrategy == berthv1alpha1.StrictFIFO {
			c.blocked[e.head.ClusterQueue] = true
		}
		c.setPending(ctx, e.head, berthv1alpha1.ReasonPending, msg, queue.RequeueWaiting)
		return
	}
	errs := c.writePreemptions(ctx, e, targets)
	evicting, failed, victims := c.settlePreemptions(ctx, info, targets, errs)
	var msg string
	rr := queue.RequeueWaiting
	switch {
	case failed > 0:
		msg = fmt.Sprintf("Preempting %d workloads to make room; %d preemptions failed and will be retried", len(targets)-evicting, failed)
		rr = queue.RequeueRetry
	case evicting == len(targets):
		msg = fmt.Sprintf("Waiting for %d preempted workloads to release their quota", evicting)
	default:
		msg = fmt.Sprintf("Preempting %d workloads to make room", len(targets))
	}
	if failed < len(targets) {
		// Some room is on its way: hold it for this head.
		c.reserve(e, victims)
	}
	if e.cq.QueueingStrategy == berthv1alpha1.StrictFIFO {
		c.blocked[e.head.ClusterQueue] = true
	}
	c.setPending(ctx, e.head, berthv1alpha1.ReasonPending, msg, rr)
}

// writePreemptions claims the targets and writes the evictions of those
// not already evicting, together: one round trip per preemptor. It returns
// each write's error.
func (c *cycle) writePreemptions(ctx context.Context, e *entry, targets []preemption.Target) []error {
	info := e.head.Info
	errs := make([]error, len(targets))
	var writes sync.WaitGroup
	for i, t := range targets {
		c.snap.Claim(t.Info.Key)
		if t.Info.Evicting {
			continue
		}
		msg := fmt.Sprintf("Preempted to accommodate workload %s (priority %d) in ClusterQueue %s", info.Key, info.Priority, e.head.ClusterQueue)
		if t.Why != "" {
			msg += " " + t.Why
		}
		if c.slots == nil {
			errs[i] = c.applier.Preempt(ctx, t.Info.Obj, t.Reason, msg)
			continue
		}
		c.goWrite(&writes, func() { errs[i] = c.applier.Preempt(ctx, t.Info.Obj, t.Reason, msg) })
	}
	writes.Wait()
	return errs
}

// settlePreemptions marks the written evictions in the cache and the
// snapshot, and counts the targets already evicting and the failed
// writes. victims are the targets whose quota is on its way back.
func (c *cycle) settlePreemptions(ctx context.Context, preemptor *workload.Info, targets []preemption.Target, errs []error) (evicting, failed int, victims []victim) {
	for i, t := range targets {
		switch {
		case t.Info.Evicting:
			evicting++
		case errs[i] != nil:
			logWriteError(logr.FromContextOrDiscard(ctx), errs[i], "Preempting workload", "workload", t.Info.Key, "preemptor", preemptor.Key)
			failed++
			continue
		default:
			c.cache.MarkEvicting(t.Info.Key)
			c.snap.MarkEvicting(t.Info)
			c.stats.Preempted++
		}
		victims = append(victims, victim{key: t.Info.Key, clusterQueue: t.Info.ClusterQueue})
	}
	return evicting, failed, victims
}

// podSetRequest is the per-pod request of the podset named name.
func podSetRequest(info *workload.Info, name string) resources.Requests {
	for i := range info.PodSets {
		if info.PodSets[i].Name == name {
			return info.PodSets[i].PerPod
		}
	}
	return nil
}
