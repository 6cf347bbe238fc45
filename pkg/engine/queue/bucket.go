package queue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/pkg/engine/workload"
)

// A bucket holds the pending workloads of one ClusterQueue that have the
// same shape: the same podsets with the same counts, per-pod requests,
// tolerations, node selector and topology request. Workloads of one shape
// need exactly the same quota and may go to exactly the same flavors and
// nodes, so when a bucket's
// head cannot be admitted nor make room by preemption, no workload behind
// it can either: they have no higher priority, hence no more preemption
// candidates. The bucket is then set aside as a whole, and a cycle costs
// one evaluation per shape instead of one per pending workload.
type bucket struct {
	// shape is the bucket's key: the workloads' shape, after their
	// LocalQueue's key when the queue orders by LocalQueue usage.
	shape string
	// lq is the LocalQueue of the bucket's workloads, when the queue
	// orders by LocalQueue usage: each LocalQueue has buckets of its own;
	// share is then that LocalQueue's share, copied here for the heap.
	lq    string
	share float64
	heap  *heap[*workload.Info]
	// aside is true while the bucket waits for an event that could let its
	// head fit.
	aside bool
	// parked is true for the rest of a cycle in which its head did not
	// fit: the cycle's snapshot does not change, so neither would the
	// answer for the workloads behind it.
	parked bool
	// untold are the keys of workloads pushed since the bucket last told
	// its members why they wait (see Behind).
	untold []string
}

func newBucket(shape, lq string) *bucket {
	return &bucket{shape: shape, lq: lq, heap: newHeap(infoKey, Less)}
}

func infoKey(info *workload.Info) string { return info.Key }

func (b *bucket) head() *workload.Info {
	info, _ := b.heap.top()
	return info
}

// newReady is a heap of q's non-empty buckets ordered by their heads, so
// that its top holds the queue's next workload. When q orders by
// LocalQueue usage, the buckets of the LocalQueue with the lowest share go
// first.
func newReady(q *clusterQueue) *heap[*bucket] {
	return newHeap(func(b *bucket) string { return b.shape }, func(a, b *bucket) bool {
		if q.fair && a.share != b.share {
			return a.share < b.share
		}
		return Less(a.head(), b.head())
	})
}

// shapeOf is the bucket key of info: everything flavor assignment and
// preemption look at besides priority and queue time.
func shapeOf(info *workload.Info) string {
	var b strings.Builder
	for i := range info.PodSets {
		ps := &info.PodSets[i]
		b.WriteString(ps.Name)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(int(ps.Count)))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(int(ps.MinCount)))
		names := make([]corev1.ResourceName, 0, len(ps.PerPod))
		for r := range ps.PerPod {
			names = append(names, r)
		}
		slices.Sort(names)
		for _, r := range names {
			b.WriteByte(' ')
			b.WriteString(string(r))
			b.WriteByte('=')
			b.WriteString(strconv.FormatInt(ps.PerPod[r], 10))
		}
		if len(ps.NodeSelector) > 0 {
			// %v prints a map sorted by key.
			fmt.Fprintf(&b, " sel=%v", ps.NodeSelector)
		}
		if ps.NodeAffinity != nil {
			fmt.Fprintf(&b, " aff=%s", ps.NodeAffinity.String())
		}
		for _, t := range ps.Tolerations {
			fmt.Fprintf(&b, " tol=%s/%s/%s/%s", t.Key, t.Operator, t.Value, t.Effect)
			if t.TolerationSeconds != nil {
				fmt.Fprintf(&b, "/%d", *t.TolerationSeconds)
			}
		}
		// Where its pods must go in a topology decides whether they fit:
		// a gang that needs one rack is not one that may spread.
		if t := ps.Topology; t != (workload.TopologyRequest{}) || ps.TopologyError != nil {
			fmt.Fprintf(&b, " topo=%s/%t/%s/%d/%v", t.Level, t.Required, t.SliceLevel, t.SliceSize, ps.TopologyError != nil)
		}
		b.WriteByte(';')
	}
	return b.String()
}
