package scheduler

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/go-logr/logr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/scheduler/flavorassigner"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// entry is one head in a cycle, with its nominated assignment.
type entry struct {
	head       queue.Head
	cq         *cache.ClusterQueue
	assignment *flavorassigner.Assignment
	// generation and fabricGeneration are the cohort tree's and the
	// fabrics' generations the assignment was computed at; a later
	// admission in the tree, or a later placement in a fabric, makes it
	// stale.
	generation, fabricGeneration int64
	// inadmissible, when set, is why the head cannot be considered at all.
	inadmissible string
	// deactivated heads are dropped: the workload controller says why they
	// wait and queues them again when they are activated.
	deactivated bool
	// released is the reservation the head held until its round began.
	released *nomination
	// shares are, with fair sharing, the weighted shares of the nodes on
	// the path of the head's queue once it is admitted, for a head that
	// borrows.
	shares []cache.PathShare
}

// cycle is the scratch state of one Schedule call.
type cycle struct {
	*Scheduler
	snap    *cache.Snapshot
	blocked map[berthv1alpha1.ClusterQueueReference]bool
	// preemptor is, per ClusterQueue, the head that preempted in this
	// cycle, or waits for its victims: its later heads may be admitted
	// where they fit, but not preempt too.
	preemptor map[berthv1alpha1.ClusterQueueReference]string
	requeue   []requeued
	// admissions are the cycle's admissions whose writes have not been
	// settled; with parallelism above one they are under way.
	admissions []*admission
	writes     sync.WaitGroup
	slots      chan struct{}
	// strictWriting is set while an admission in a StrictFIFO queue is
	// unsettled: nothing of that queue may be decided until it is.
	strictWriting bool
	// readinessBlocked is set once a head waited for the pods of admitted
	// workloads (WithBlockAdmission): no further round is taken.
	readinessBlocked bool
	stats            Stats
}

// admission is an assumed admission whose write is outstanding.
type admission struct {
	e    *entry
	info *workload.Info
	adm  *berthv1alpha1.Admission
	// written is the object as the API server returned it.
	written *berthv1alpha1.Workload
	err     error
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
	c := &cycle{Scheduler: s, snap: s.cache.Snapshot(), blocked: map[berthv1alpha1.ClusterQueueReference]bool{}, preemptor: map[berthv1alpha1.ClusterQueueReference]string{}}
	c.snap.FairSharing, c.snap.FairStrategies = s.fairSharing, s.fairStrategies
	if s.parallelism > 1 {
		c.slots = make(chan struct{}, s.parallelism)
	}
	c.applyNominations()
	c.forgetWaits()
	for {
		if c.strictWriting {
			c.settleAdmissions(ctx)
		}
		if c.readinessBlocked {
			break
		}
		if c.writesFull() {
			// Another round would wait for write slots while the snapshot
			// grows old, and quota that finished workloads free meanwhile
			// would wait for this cycle to end: the next cycle, on a fresh
			// snapshot, takes the heads left.
			s.queues.Wake()
			break
		}
		heads := s.queues.Heads(c.blocked, mark)
		if len(heads) == 0 {
			break
		}
		// Every head's reservation is given up before any head is
		// assigned: a head assigned first would see the room still held,
		// not fit, and sort ahead of the nominee as a head that does not
		// borrow, to find the room free when its turn came.
		released := make([]*nomination, len(heads))
		for i, h := range heads {
			released[i] = c.release(h.Info.Key)
		}
		entries := make([]entry, len(heads))
		for i, h := range heads {
			entries[i] = c.nominate(h)
			entries[i].released = released[i]
		}
		sort.Slice(entries, func(i, j int) bool { return entryLess(&entries[i], &entries[j]) })
		for i := range entries {
			c.process(ctx, &entries[i])
		}
	}
	c.settleAdmissions(ctx)
	for _, r := range c.requeue {
		s.queues.Requeue(r.head, r.reason)
	}
	s.queues.EndCycle()
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
		e.generation, e.fabricGeneration = e.cq.TreeGeneration(), c.snap.FabricGeneration()
		e.assignment = flavorassigner.Assign(c.snap, e.cq, h.Info)
		if c.fairSharing && e.assignment != nil && e.assignment.Borrows {
			e.shares = e.cq.SharesWith(e.assignment.Usage)
		}
	}
	return e
}

// entryLess orders a round: considerable before inadmissible, fitting
// without borrowing before borrowing, a head that held a reservation
// before one that did not, with fair sharing the lower share where the
// paths of two borrowers' queues part, priority, queue time, key. The room a
// preemptor's victims gave up goes to it, not to a head of another queue
// that made no room: were it handed over, the victims would have been
// evicted for nothing, and the preemptor would evict again.
func entryLess(a, b *entry) bool {
	if (a.assignment == nil) != (b.assignment == nil) {
		return a.assignment != nil
	}
	if a.assignment != nil && a.assignment.Borrows != b.assignment.Borrows {
		return !a.assignment.Borrows
	}
	if (a.released != nil) != (b.released != nil) {
		return a.released != nil
	}
	if less, decided := cache.FairLess(a.shares, b.shares); decided {
		return less
	}
	if !queue.Less(a.head.Info, b.head.Info) && !queue.Less(b.head.Info, a.head.Info) {
		return a.head.ClusterQueue < b.head.ClusterQueue
	}
	return queue.Less(a.head.Info, b.head.Info)
}

// process decides e. If e's head held a reservation until its round and
// the decision neither takes it again nor admits the head into it, what
// was set aside because of it is tried again.
func (c *cycle) process(ctx context.Context, e *entry) {
	c.decide(ctx, e)
	if n := e.released; n != nil && c.nominated[e.head.Info.Key] == nil && !c.admittedInto(e, n.held) {
		c.freed(n)
	}
}

// admittedInto reports whether e was just admitted with at least held.
func (c *cycle) admittedInto(e *entry, held resources.Usage) bool {
	if len(c.admissions) == 0 || c.admissions[len(c.admissions)-1].e != e {
		return false
	}
	for fr, v := range held {
		if e.assignment.Usage[fr] < v {
			return false
		}
	}
	return true
}

func (c *cycle) decide(ctx context.Context, e *entry) {
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
		if c.cache.IsAssumed(info.Key) {
			// This scheduler admitted it and the write is not answered
			// or not yet seen; a newer version of it was queued
			// meanwhile. It leaves the queue when the admission is seen,
			// and is tried again if the write failed.
			c.requeue = append(c.requeue, requeued{e.head, queue.RequeueWaiting})
			return
		}
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
	if msg := c.readinessBlock(); msg != "" {
		c.pending(ctx, e, berthv1alpha1.ReasonPending, msg, queue.RequeueWaiting)
		return
	}
	if e.cq.TreeGeneration() != e.generation || c.snap.FabricGeneration() != e.fabricGeneration {
		e.assignment = flavorassigner.Assign(c.snap, e.cq, info)
	}
	switch a := e.assignment; a.Mode {
	case flavorassigner.Fit, flavorassigner.Borrow:
		c.admit(ctx, e)
	case flavorassigner.Preempt:
		c.preempt(ctx, e)
	default:
		c.pending(ctx, e, berthv1alpha1.ReasonPending, "The workload does not fit: "+a.Message()+fairNote(e)+c.usageNote(e), queue.RequeueInadmissible)
	}
}

// fairNote says, for a head that would have borrowed under fair sharing,
// what its queue's share would have been: borrowers of lower shares went
// first.
func fairNote(e *entry) string {
	if len(e.shares) == 0 {
		return ""
	}
	own := e.shares[len(e.shares)-1]
	return fmt.Sprintf("; with it, %s would borrow at a weighted share of %s, and fair sharing lends first to lower shares", own.Name(), cache.FormatShare(own.Share))
}

// usageNote says, for a head of a queue with admission fair sharing, the
// recent usage its LocalQueue is ordered by.
func (c *cycle) usageNote(e *entry) string {
	share, weight, ok := c.queues.LocalQueueShare(e.head.Info, e.head.ClusterQueue)
	if !ok {
		return ""
	}
	return fmt.Sprintf("; LocalQueue %s's recent usage, weighted, is %s of the queue's quota (weight %s), and LocalQueues of lower usage go first",
		e.head.Info.Obj.Spec.QueueName, queue.FormatShare(share), strconv.FormatFloat(weight, 'f', -1, 64))
}

// admit assumes the head's admission in the cache and the snapshot at
// once, so that later heads see its quota taken, and sends the write on
// its way; settleAdmissions collects the answer.
func (c *cycle) admit(ctx context.Context, e *entry) {
	info := *e.head.Info
	info.ClusterQueue = e.head.ClusterQueue
	info.Usage = e.assignment.Usage
	info.Placements = e.assignment.Placements(&info)
	info.ReservedAt = c.now()
	delete(c.waiting, info.Key)
	if err := c.cache.AssumeWorkload(&info); err != nil {
		c.queues.Done(e.head)
		return
	}
	c.snap.AddWorkload(&info)
	c.snap.Place(&info)
	c.queues.Charge(e.head, info.Usage)
	a := &admission{e: e, info: &info, adm: e.assignment.Admission(e.head.ClusterQueue)}
	c.admissions = append(c.admissions, a)
	if e.cq.QueueingStrategy == berthv1alpha1.StrictFIFO {
		c.strictWriting = true
	}
	if c.slots != nil {
		c.goWrite(&c.writes, func() { a.written, a.err = c.applier.Admit(ctx, e.head.Info.Obj, a.adm) })
	}
}

// writesFull reports whether every write slot is taken.
func (c *cycle) writesFull() bool {
	return c.slots != nil && len(c.slots) == cap(c.slots)
}

// goWrite runs write in wg once one of the scheduler's write slots is free.
func (c *cycle) goWrite(wg *sync.WaitGroup, write func()) {
	c.slots <- struct{}{}
	wg.Go(func() {
		defer func() { <-c.slots }()
		write()
	})
}

// settleAdmissions waits for the outstanding admission writes (or, with a
// parallelism of one, makes them in order) and settles each. A cycle's
// writes go out while it goes on deciding; only a StrictFIFO queue waits
// for its head's write before its next head is decided.
func (c *cycle) settleAdmissions(ctx context.Context) {
	if c.slots == nil {
		for _, a := range c.admissions {
			a.written, a.err = c.applier.Admit(ctx, a.e.head.Info.Obj, a.adm)
		}
	}
	c.writes.Wait()
	log := logr.FromContextOrDiscard(ctx)
	for _, a := range c.admissions {
		e := a.e
		if a.err != nil {
			logWriteError(log, a.err, "Admitting workload", "workload", a.info.Key)
			// The quota stays taken in this cycle's snapshot: handing it
			// to a later head now could admit the very workloads this one
			// preempted, and the two would take turns.
			c.cache.ForgetWorkload(a.info.Key)
			// The quota is free again for the next cycle: wake what
			// could not fit because of it.
			c.queues.QueueInadmissible(e.head.ClusterQueue)
			c.requeue = append(c.requeue, requeued{e.head, queue.RequeueRetry})
			if e.cq.QueueingStrategy == berthv1alpha1.StrictFIFO {
				// The head is retried next cycle; nothing may pass it.
				c.blocked[e.head.ClusterQueue] = true
			}
			continue
		}
		if a.written != nil {
			c.cache.UpdateAssumed(a.written)
		}
		c.queues.Done(e.head)
		c.stats.Admitted++
		log.V(3).Info("Workload admitted", "workload", a.info.Key, "clusterQueue", e.head.ClusterQueue)
	}
	clear(c.admissions)
	c.admissions = c.admissions[:0]
	c.strictWriting = false
}

func (c *cycle) pending(ctx context.Context, e *entry, reason, msg string, rr queue.RequeueReason) {
	if e.cq == nil || e.cq.QueueingStrategy == berthv1alpha1.StrictFIFO {
		c.blocked[e.head.ClusterQueue] = true
	} else {
		c.queues.Park(e.head)
	}
	c.setPending(ctx, e.head, reason, msg, rr)
}

// setPending records why a head waits and sends it back to its queue.
func (c *cycle) setPending(ctx context.Context, h queue.Head, reason, msg string, rr queue.RequeueReason) {
	c.stats.Pending++
	logr.FromContextOrDiscard(ctx).V(3).Info("Workload pending", "workload", h.Info.Key, "reason", reason, "message", msg)
	c.applier.SetPending(h.Info.Obj, reason, msg)
	c.requeue = append(c.requeue, requeued{h, rr})
}
