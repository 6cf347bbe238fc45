package queue

import (
	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// clusterQueue holds the pending workloads of one ClusterQueue, in buckets
// by shape. A workload is in exactly one of: a bucket (queued, possibly set
// aside with its bucket) or inFlight (popped by a cycle).
type clusterQueue struct {
	name     berthv1alpha1.ClusterQueueReference
	cohort   berthv1alpha1.CohortReference
	strategy berthv1alpha1.QueueingStrategy

	buckets map[string]*bucket
	// of maps the key of each queued workload to its bucket.
	of map[string]*bucket
	// ready holds the buckets that have workloads and are not set aside.
	ready *heap[*bucket]
	// aside holds the buckets set aside; parked those parked for the
	// current cycle.
	aside    map[*bucket]struct{}
	parked   map[*bucket]struct{}
	inFlight map[string]flight
	// activations counts the events that re-activated the queue.
	activations int64
	// told holds the queued workloads already told that they wait behind
	// a head of their shape; each is told once while it is queued.
	told map[string]bool

	// fair is set when the queue orders its workloads by their
	// LocalQueue's recent usage (admission fair sharing); quota is then
	// its nominal quota per resource, locals its LocalQueues and shares
	// their shares by key.
	fair   bool
	quota  map[corev1.ResourceName]int64
	locals map[string]*localQueue
	shares map[string]float64
}

// flight is a workload popped by a cycle, with its bucket's shape.
type flight struct {
	info  *workload.Info
	shape string
}

func newClusterQueue(name berthv1alpha1.ClusterQueueReference) *clusterQueue {
	q := &clusterQueue{
		name: name, buckets: map[string]*bucket{}, of: map[string]*bucket{},
		aside: map[*bucket]struct{}{}, parked: map[*bucket]struct{}{}, inFlight: map[string]flight{},
		told: map[string]bool{}, locals: map[string]*localQueue{}, shares: map[string]float64{},
	}
	q.ready = newReady(q)
	return q
}

// bucketKey is the key of the bucket of info, whose shape is shape.
func (q *clusterQueue) bucketKey(info *workload.Info, shape string) string {
	if q.fair {
		return workload.LocalQueueKey(info.Obj) + "|" + shape
	}
	return shape
}

// bucketFor returns the bucket of key for info, created empty if needed.
func (q *clusterQueue) bucketFor(key string, info *workload.Info) *bucket {
	b := q.buckets[key]
	if b == nil {
		lq := ""
		if q.fair {
			lq = workload.LocalQueueKey(info.Obj)
		}
		b = newBucket(key, lq)
		q.buckets[key] = b
	}
	return b
}

// push queues info in the bucket of key, replacing a queued entry with
// the same key, and returns the bucket.
func (q *clusterQueue) push(info *workload.Info, key string) *bucket {
	b := q.bucketFor(key, info)
	b.heap.pushOrUpdate(info)
	q.of[info.Key] = b
	if !q.told[info.Key] {
		b.untold = append(b.untold, info.Key)
	}
	q.settle(b)
	return b
}

// tell returns, once per workload, the members of b queued behind head,
// which did not fit: they wait for the same reason.
func (q *clusterQueue) tell(b *bucket, head *workload.Info) []Behind {
	var out []Behind
	for _, key := range b.untold {
		info, ok := b.heap.get(key)
		if !ok || key == head.Key || q.told[key] {
			continue
		}
		q.told[key] = true
		out = append(out, Behind{Workload: info.Obj, Head: head.Obj})
	}
	b.untold = b.untold[:0]
	return out
}

// tellAll returns, once per workload, every queued workload but head, the
// head of a StrictFIFO queue that did not fit: none of them is tried
// before it.
func (q *clusterQueue) tellAll(head *workload.Info) []Behind {
	var out []Behind
	for _, b := range q.buckets {
		for _, t := range q.tell(b, head) {
			t.Strict = true
			out = append(out, t)
		}
	}
	return out
}

// reorder re-orders the ready buckets after the share of LocalQueue lq,
// or of all when lq is empty, changed. The other buckets take theirs when
// they are ready again (settle).
func (q *clusterQueue) reorder(lq string) {
	for _, b := range q.ready.items {
		if lq == "" || b.lq == lq {
			b.share = q.shares[b.lq]
		}
	}
	q.ready.reorder()
}

// flightKey is the bucket key of the popped head h: the one it was popped
// from, or, after a change of the queue's ordering, its new one.
func (q *clusterQueue) flightKey(h Head) string {
	if f, ok := q.inFlight[h.Info.Key]; ok {
		return f.shape
	}
	return h.shape
}

// version returns the queued or popped entry of key, nil if none.
func (q *clusterQueue) version(key string) *workload.Info {
	if b := q.of[key]; b != nil {
		info, _ := b.heap.get(key)
		return info
	}
	return q.inFlight[key].info
}

// remove drops the queued workload with key, if it is queued.
func (q *clusterQueue) remove(key string) {
	b := q.of[key]
	if b == nil {
		return
	}
	b.heap.remove(key)
	delete(q.of, key)
	q.settle(b)
}

// pop takes the queue's next workload out of its bucket into flight.
func (q *clusterQueue) pop() *workload.Info {
	b, ok := q.ready.top()
	if !ok {
		return nil
	}
	info, _ := b.heap.pop()
	delete(q.of, info.Key)
	q.inFlight[info.Key] = flight{info: info, shape: b.shape}
	q.settle(b)
	return info
}

// setAside sets b aside until the next activation.
func (q *clusterQueue) setAside(b *bucket) {
	b.aside = true
	q.aside[b] = struct{}{}
	q.settle(b)
}

// putBack returns b from aside to the ready buckets.
func (q *clusterQueue) putBack(b *bucket) {
	if !b.aside {
		return
	}
	b.aside = false
	delete(q.aside, b)
	q.settle(b)
}

// park keeps b out of the cycle under way.
func (q *clusterQueue) park(b *bucket) {
	b.parked = true
	q.parked[b] = struct{}{}
	q.settle(b)
}

// unparkAll ends a cycle: parked buckets are ready again unless set aside.
func (q *clusterQueue) unparkAll() {
	for b := range q.parked {
		b.parked = false
		delete(q.parked, b)
		q.settle(b)
	}
}

// activate puts back every bucket set aside: an event may let their heads
// fit now.
func (q *clusterQueue) activate() {
	q.activations++
	for b := range q.aside {
		q.putBack(b)
	}
}

// settle puts b where its state says: in ready when it has workloads and
// is neither set aside nor parked, out of it otherwise. An empty bucket in
// neither state is dropped.
func (q *clusterQueue) settle(b *bucket) {
	if q.fair {
		b.share = q.shares[b.lq]
	}
	if !b.aside && !b.parked && b.heap.len() > 0 {
		q.ready.pushOrUpdate(b)
	} else {
		q.ready.remove(b.shape)
	}
	if b.heap.len() == 0 && !b.aside && !b.parked {
		delete(q.buckets, b.shape)
	}
}

// rebucket puts every queued and popped workload in the buckets of the
// queue's current ordering, after fair changed. Set-aside buckets are
// tried again.
func (q *clusterQueue) rebucket() {
	infos := q.workloads(false)
	infos = append(infos, q.workloads(true)...)
	q.buckets, q.of = map[string]*bucket{}, map[string]*bucket{}
	q.aside, q.parked = map[*bucket]struct{}{}, map[*bucket]struct{}{}
	q.ready = newReady(q)
	for _, info := range infos {
		q.push(info, q.bucketKey(info, shapeOf(info)))
	}
	for key, f := range q.inFlight {
		f.shape = q.bucketKey(f.info, shapeOf(f.info))
		q.inFlight[key] = f
	}
}

// queued is the number of workloads in buckets, set aside or not.
func (q *clusterQueue) queued() int { return len(q.of) }

// workloads returns the queued workloads in buckets that are (aside true) or
// are not (aside false) set aside.
func (q *clusterQueue) workloads(aside bool) []*workload.Info {
	var out []*workload.Info
	for _, b := range q.buckets {
		if b.aside == aside {
			out = append(out, b.heap.items...)
		}
	}
	return out
}
