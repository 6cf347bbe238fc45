package queue

import (
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workload"
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
}

// flight is a workload popped by a cycle, with its bucket's shape.
type flight struct {
	info  *workload.Info
	shape string
}

func newClusterQueue(name berthv1alpha1.ClusterQueueReference) *clusterQueue {
	return &clusterQueue{
		name: name, buckets: map[string]*bucket{}, of: map[string]*bucket{}, ready: newReady(),
		aside: map[*bucket]struct{}{}, parked: map[*bucket]struct{}{}, inFlight: map[string]flight{},
		told: map[string]bool{},
	}
}

// bucketFor returns the bucket of shape, created empty if needed.
func (q *clusterQueue) bucketFor(shape string) *bucket {
	b := q.buckets[shape]
	if b == nil {
		b = newBucket(shape)
		q.buckets[shape] = b
	}
	return b
}

// push queues info in the bucket of shape, replacing a queued entry with
// the same key, and returns the bucket.
func (q *clusterQueue) push(info *workload.Info, shape string) *bucket {
	b := q.bucketFor(shape)
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
	if !b.aside && !b.parked && b.heap.len() > 0 {
		q.ready.pushOrUpdate(b)
	} else {
		q.ready.remove(b.shape)
	}
	if b.heap.len() == 0 && !b.aside && !b.parked {
		delete(q.buckets, b.shape)
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
