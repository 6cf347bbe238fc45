package queue

import (
	"slices"
	"strings"

	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Less reports whether a goes before b in a queue: higher priority, then
// earlier queue time, then key. It is the order of the whole queue too:
// the head of the queue is the least of its buckets' heads.
func Less(a, b *workload.Info) bool {
	return compare(a, b) < 0
}

// Sort puts infos in the order a ClusterQueue tries them (Less): the
// positions kubectl berth shows are these.
func Sort(infos []*workload.Info) {
	slices.SortFunc(infos, compare)
}

// compare is Less as a three-way comparison, one pass over the fields: a
// sort of a long queue (the visibility API's) calls it n log n times.
func compare(a, b *workload.Info) int {
	if a.Priority != b.Priority {
		if a.Priority > b.Priority {
			return -1
		}
		return 1
	}
	if c := a.QueueTime.Compare(b.QueueTime); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// SortByShare puts infos in the order of a ClusterQueue with admission
// fair sharing: by the share of their LocalQueue (share gives it by the
// LocalQueue's key), lowest first, then as Sort.
func SortByShare(infos []*workload.Info, share func(lq string) float64) {
	slices.SortFunc(infos, byShare(share))
}

// byShare is SortByShare's comparison.
func byShare(share func(lq string) float64) func(a, b *workload.Info) int {
	return func(a, b *workload.Info) int {
		if la, lb := workload.LocalQueueKey(a.Obj), workload.LocalQueueKey(b.Obj); la != lb {
			if sa, sb := share(la), share(lb); sa != sb {
				if sa < sb {
					return -1
				}
				return 1
			}
		}
		return compare(a, b)
	}
}

// heap is a binary heap ordered by less, indexed by each item's key so
// that an update or a removal is O(log n). It holds the workloads of a
// bucket and the ready buckets of a queue. container/heap would need an
// interface value per call and the index kept by its caller.
type heap[T any] struct {
	items []T
	index map[string]int
	key   func(T) string
	less  func(a, b T) bool
}

func newHeap[T any](key func(T) string, less func(a, b T) bool) *heap[T] {
	return &heap[T]{index: map[string]int{}, key: key, less: less}
}

func (h *heap[T]) len() int { return len(h.items) }

// top returns the least item without removing it.
func (h *heap[T]) top() (T, bool) {
	if len(h.items) == 0 {
		var zero T
		return zero, false
	}
	return h.items[0], true
}

// get returns the item with key.
func (h *heap[T]) get(key string) (T, bool) {
	i, ok := h.index[key]
	if !ok {
		var zero T
		return zero, false
	}
	return h.items[i], true
}

// pushOrUpdate inserts x or replaces the item with the same key.
func (h *heap[T]) pushOrUpdate(x T) {
	k := h.key(x)
	if i, ok := h.index[k]; ok {
		h.items[i] = x
		h.fix(i)
		return
	}
	h.items = append(h.items, x)
	h.index[k] = len(h.items) - 1
	h.up(len(h.items) - 1)
}

// pop removes and returns the least item.
func (h *heap[T]) pop() (T, bool) {
	top, ok := h.top()
	if ok {
		h.removeAt(0)
	}
	return top, ok
}

// remove removes and returns the item with key.
func (h *heap[T]) remove(key string) (T, bool) {
	i, ok := h.index[key]
	if !ok {
		var zero T
		return zero, false
	}
	x := h.items[i]
	h.removeAt(i)
	return x, true
}

func (h *heap[T]) removeAt(i int) {
	last := len(h.items) - 1
	delete(h.index, h.key(h.items[i]))
	if i != last {
		h.items[i] = h.items[last]
		h.index[h.key(h.items[i])] = i
	}
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	if i != last {
		h.fix(i)
	}
}

// reorder restores the heap's order after less changed for its items.
func (h *heap[T]) reorder() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *heap[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *heap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.key(h.items[i])] = i
	h.index[h.key(h.items[j])] = j
}

func (h *heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts i down and reports whether it moved.
func (h *heap[T]) down(i int) bool {
	start, n := i, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
