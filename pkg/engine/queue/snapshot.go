package queue

import (
	"maps"
	"slices"
	"sort"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Snapshot is a copy of the workloads waiting in one ClusterQueue, set
// aside, popped by a cycle or neither, for reading their order (the
// visibility API's positions) without the Manager's lock. It keeps each
// bucket's heap as it was, so the first positions cost a walk of the heaps'
// tops, not a sort of the whole queue.
type Snapshot struct {
	// heaps are the buckets' heaps, and the popped workloads sorted (a
	// sorted slice is a heap too).
	heaps [][]*workload.Info
	cmp   func(a, b *workload.Info) int
	n     int
}

// Snapshot copies what waits in cq; false when the Manager does not know
// cq. The lock is held for the copy of the pointers only.
func (m *Manager) Snapshot(cq berthv1alpha1.ClusterQueueReference) (*Snapshot, bool) {
	m.mu.Lock()
	q := m.queues[cq]
	if q == nil {
		m.mu.Unlock()
		return nil, false
	}
	s := &Snapshot{heaps: make([][]*workload.Info, 0, len(q.buckets)+1), cmp: compare}
	for _, b := range q.buckets {
		if b.heap.len() > 0 {
			s.heaps = append(s.heaps, slices.Clone(b.heap.items))
			s.n += b.heap.len()
		}
	}
	popped := make([]*workload.Info, 0, len(q.inFlight))
	for _, f := range q.inFlight {
		popped = append(popped, f.info)
	}
	var shares map[string]float64
	if q.fair {
		shares = maps.Clone(q.shares)
	}
	m.mu.Unlock()
	if shares != nil {
		s.cmp = byShare(func(lq string) float64 { return shares[lq] })
	}
	slices.SortFunc(popped, s.cmp)
	if len(popped) > 0 {
		s.heaps = append(s.heaps, popped)
		s.n += len(popped)
	}
	return s, true
}

// Len is the number of waiting workloads.
func (s *Snapshot) Len() int { return s.n }

// Walk calls f with the waiting workloads in the queue's order, until f
// returns false: a best-first walk of the heaps, O(k log b) for the first
// k of b buckets.
func (s *Snapshot) Walk(f func(*workload.Info) bool) {
	fr := newHeap(func(x spot) string { return x.info.Key }, func(a, b spot) bool { return s.cmp(a.info, b.info) < 0 })
	for i, h := range s.heaps {
		fr.pushOrUpdate(spot{info: h[0], heap: i})
	}
	for {
		top, ok := fr.pop()
		if !ok || !f(top.info) {
			return
		}
		h := s.heaps[top.heap]
		for _, c := range []int{2*top.at + 1, 2*top.at + 2} {
			if c < len(h) {
				fr.pushOrUpdate(spot{info: h[c], heap: top.heap, at: c})
			}
		}
	}
}

// Select returns the waiting workloads keep accepts, in the queue's order.
func (s *Snapshot) Select(keep func(*workload.Info) bool) []*workload.Info {
	var out []*workload.Info
	for _, h := range s.heaps {
		for _, info := range h {
			if keep(info) {
				out = append(out, info)
			}
		}
	}
	slices.SortFunc(out, s.cmp)
	return out
}

// Before returns, for each of sorted (in the queue's order), how many
// waiting workloads go before it: O(n log k) for k of n.
func (s *Snapshot) Before(sorted []*workload.Info) []int {
	counts := make([]int, len(sorted)+1)
	for _, h := range s.heaps {
		for _, info := range h {
			// The first of sorted that info does not go before; info goes
			// before every one from there on.
			i := sort.Search(len(sorted), func(i int) bool { return s.cmp(info, sorted[i]) < 0 })
			counts[i]++
		}
	}
	out := make([]int, len(sorted))
	ahead := 0
	for i := range sorted {
		ahead += counts[i]
		out[i] = ahead
	}
	return out
}

// spot is a workload of the walk's frontier: the one at index at of
// heaps[heap].
type spot struct {
	info     *workload.Info
	heap, at int
}
