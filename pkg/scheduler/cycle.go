package scheduler

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/go-logr/logr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/cache"
	"github.com/berth-dev/berth/pkg/queue"
	"github.com/berth-dev/berth/pkg/scheduler/flavorassigner"
	"github.com/berth-dev/berth/pkg/workload"
)

// entry is one head in a cycle, with its nominated assignment.
type entry struct {
	head       queue.Head
	cq         *cache.ClusterQueue
	assignment *flavorassigner.Assignment
	// generation is the cohort tree's generation the assignment was
	// computed at; a later admission in the tree makes it stale.
	generation int64
	// inadmissible, when set, is why the head cannot be considered at all.
	inadmissible string
	// deactivated heads are dropped: the workload controller says why they
	// wait and queues them again when they are activated.
	deactivated bool
}

// cycle is the scratch state of one Schedule call.
type cycle struct {
	*Scheduler
	snap    *cache.Snapshot
	blocked map[berthv1alpha1.ClusterQueueReference]bool
	requeue []requeued
	// admissions are the round's admissions, written together at its end.
	admissions []admission
	stats      Stats
}

// admission is an assumed admission whose write is outstanding.
type admission struct {
	e    *entry
	info *workload.Info
	adm  *berthv1alpha1.Admission
	err  error
}

type requeued struct {
	head   queue.Head
	reason queue.RequeueReason
}

// Schedule runs one cycle: rounds of heads until every queue is empty or
// blocked. Heads that stay pending go back to their queues at the end, so
// that one cycle never considers a workload twice.
func (s *Scheduler) Schedule(ctx context.Context) Stats {
	mark := s.queues.Mark()
	c := &cycle{Scheduler: s, snap: s.cache.Snapshot(), blocked: map[berthv1alpha1.ClusterQueueReference]bool{}}
	for {
		heads := s.queues.Heads(c.blocked, mark)
		if len(heads) == 0 {
			break
		}
		entries := make([]entry, len(heads))
		for i, h := range heads {
			entries[i] = c.nominate(h)
		}
		sort.Slice(entries, func(i, j int) bool { return entryLess(&entries[i], &entries[j]) })
		for i := range entries {
			c.process(ctx, &entries[i])
		}
		c.writeAdmissions(ctx)
	}
	for _, r := range c.requeue {
		s.queues.Requeue(r.head, r.reason)
	}
	return c.stats
}

func (c *cycle) nominate(h queue.Head) entry {
	e := entry{head: h, cq: c.snap.ClusterQueues[h.ClusterQueue]}
	switch {
	case e.cq == nil:
		e.inadmissible = fmt.Sprintf("ClusterQueue %s not found", h.ClusterQueue)
	case e.cq.Inactive != "":
		e.inadmissible = e.cq.Inactive
	case !workload.IsActive(h.Info.Obj):
		e.deactivated = true
	default:
		e.generation = e.cq.TreeGeneration()
		e.assignment = flavorassigner.Assign(c.snap, e.cq, h.Info)
	}
	return e
}

// entryLess orders a round: considerable before inadmissible, fitting
// without borrowing before borrowing, priority, queue time, key.
func entryLess(a, b *entry) bool {
	if (a.assignment == nil) != (b.assignment == nil) {
		return a.assignment != nil
	}
	if a.assignment != nil && a.assignment.Borrows != b.assignment.Borrows {
		return !a.assignment.Borrows
	}
	if !queue.Less(a.head.Info, b.head.Info) && !queue.Less(b.head.Info, a.head.Info) {
		return a.head.ClusterQueue < b.head.ClusterQueue
	}
	return queue.Less(a.head.Info, b.head.Info)
}

func (c *cycle) process(ctx context.Context, e *entry) {
	info := e.head.Info
	if e.deactivated {
		c.queues.Done(e.head)
		return
	}
	if e.inadmissible != "" {
		c.pending(ctx, e, berthv1alpha1.ReasonInadmissible, e.inadmissible, queue.RequeueInadmissible)
		return
	}
	if c.snap.Contains(e.head.ClusterQueue, info.Key) {
		if c.cache.HoldsQuota(info.Key) {
			// Already holds quota: a stale queue entry. Admitting it
			// twice would double its usage.
			c.queues.Done(e.head)
			return
		}
		// It released its quota after this cycle's snapshot was taken
		// (an eviction completed) and was queued again: try it on a
		// fresh snapshot rather than drop it.
		c.requeue = append(c.requeue, requeued{e.head, queue.RequeueRetry})
		return
	}
	if e.cq.TreeGeneration() != e.generation {
		e.assignment = flavorassigner.Assign(c.snap, e.cq, info)
	}
	switch a := e.assignment; a.Mode {
	case flavorassigner.Fit, flavorassigner.Borrow:
		c.admit(e)
	case flavorassigner.Preempt:
		c.preempt(ctx, e)
	default:
		c.pending(ctx, e, berthv1alpha1.ReasonPending, "The workload does not fit: "+a.Message(), queue.RequeueInadmissible)
	}
}

// admit assumes the head's admission in the cache and the snapshot at
// once, so that later heads see its quota taken; the write goes out with
// the rest of the round's (writeAdmissions).
func (c *cycle) admit(e *entry) {
	info := *e.head.Info
	info.ClusterQueue = e.head.ClusterQueue
	info.Usage = e.assignment.Usage
	info.ReservedAt = c.now()
	if err := c.cache.AssumeWorkload(&info); err != nil {
		c.queues.Done(e.head)
		return
	}
	c.snap.AddWorkload(&info)
	c.admissions = append(c.admissions, admission{e: e, info: &info, adm: e.assignment.Admission(e.head.ClusterQueue)})
}

// writeAdmissions writes the round's admissions, up to the scheduler's
// parallelism at once, and settles each when all have answered. Every
// decision of the next round is made knowing how this round's writes went,
// exactly as if they had been written one by one.
func (c *cycle) writeAdmissions(ctx context.Context) {
	if len(c.admissions) == 0 {
		return
	}
	if c.parallelism <= 1 || len(c.admissions) == 1 {
		for i := range c.admissions {
			a := &c.admissions[i]
			a.err = c.applier.Admit(ctx, a.e.head.Info.Obj, a.adm)
		}
	} else {
		sem := make(chan struct{}, c.parallelism)
		var wg sync.WaitGroup
		for i := range c.admissions {
			a := &c.admissions[i]
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				a.err = c.applier.Admit(ctx, a.e.head.Info.Obj, a.adm)
			})
		}
		wg.Wait()
	}
	log := logr.FromContextOrDiscard(ctx)
	for i := range c.admissions {
		a := &c.admissions[i]
		e := a.e
		if a.err != nil {
			log.Error(a.err, "Admitting workload", "workload", a.info.Key)
			// The quota stays taken in this cycle's snapshot: handing it
			// to a later head now could admit the very workloads this one
			// preempted, and the two would take turns.
			c.cache.ForgetWorkload(a.info.Key)
			c.requeue = append(c.requeue, requeued{e.head, queue.RequeueRetry})
			if e.cq.QueueingStrategy == berthv1alpha1.StrictFIFO {
				// The head is retried next cycle; nothing may pass it.
				c.blocked[e.head.ClusterQueue] = true
			}
			continue
		}
		c.queues.Done(e.head)
		c.stats.Admitted++
		log.V(3).Info("Workload admitted", "workload", a.info.Key, "clusterQueue", e.head.ClusterQueue)
	}
	clear(c.admissions)
	c.admissions = c.admissions[:0]
}

func (c *cycle) pending(ctx context.Context, e *entry, reason, msg string, rr queue.RequeueReason) {
	if e.cq == nil || e.cq.QueueingStrategy == berthv1alpha1.StrictFIFO {
		c.blocked[e.head.ClusterQueue] = true
	} else {
		c.queues.SetAside(e.head)
	}
	c.setPending(ctx, e.head, reason, msg, rr)
}

// setPending writes why a head waits and sends it back to its queue with
// the version of the workload that was written.
func (c *cycle) setPending(ctx context.Context, h queue.Head, reason, msg string, rr queue.RequeueReason) {
	c.stats.Pending++
	log := logr.FromContextOrDiscard(ctx)
	log.V(3).Info("Workload pending", "workload", h.Info.Key, "reason", reason, "message", msg)
	written, err := c.applier.SetPending(ctx, h.Info.Obj, reason, msg)
	switch {
	case err != nil:
		log.Error(err, "Setting pending reason", "workload", h.Info.Key)
	case written != nil && written != h.Info.Obj:
		h = h.Refreshed(workload.NewInfo(written))
	}
	c.requeue = append(c.requeue, requeued{h, rr})
}
