package queue

import (
	"github.com/berth-dev/berth/pkg/workload"
)

// Less reports whether a goes before b in a queue: higher priority, then
// earlier queue time, then key.
func Less(a, b *workload.Info) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.QueueTime.Equal(b.QueueTime) {
		return a.QueueTime.Before(b.QueueTime)
	}
	return a.Key < b.Key
}

// heap is a binary heap of workloads ordered by Less, indexed by key so
// that an update or a delete is O(log n).
type heap struct {
	items []*workload.Info
	index map[string]int
}

func newHeap() *heap {
	return &heap{index: map[string]int{}}
}

func (h *heap) len() int { return len(h.items) }

// pushOrUpdate inserts info or replaces the entry with the same key.
func (h *heap) pushOrUpdate(info *workload.Info) {
	if i, ok := h.index[info.Key]; ok {
		h.items[i] = info
		h.fix(i)
		return
	}
	h.items = append(h.items, info)
	h.index[info.Key] = len(h.items) - 1
	h.up(len(h.items) - 1)
}

func (h *heap) pop() *workload.Info {
	if len(h.items) == 0 {
		return nil
	}
	top := h.items[0]
	h.removeAt(0)
	return top
}

func (h *heap) remove(key string) *workload.Info {
	i, ok := h.index[key]
	if !ok {
		return nil
	}
	info := h.items[i]
	h.removeAt(i)
	return info
}

func (h *heap) removeAt(i int) {
	last := len(h.items) - 1
	delete(h.index, h.items[i].Key)
	if i != last {
		h.items[i] = h.items[last]
		h.index[h.items[i].Key] = i
	}
	h.items[last] = nil
	h.items = h.items[:last]
	if i != last {
		h.fix(i)
	}
}

func (h *heap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *heap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].Key] = i
	h.index[h.items[j].Key] = j
}

func (h *heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !Less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts i down and reports whether it moved.
func (h *heap) down(i int) bool {
	start, n := i, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && Less(h.items[r], h.items[l]) {
			c = r
		}
		if !Less(h.items[c], h.items[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
