package cache

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// defaultWeight is a weight of 1, in thousandths.
const defaultWeight = 1000

// weightOf is the fair-sharing weight of a ClusterQueue or Cohort in
// thousandths: 1000 when it names none, at least 0.
func weightOf(fs *berthv1alpha1.FairSharing) int64 {
	if fs == nil || fs.Weight == nil {
		return defaultWeight
	}
	return max(0, fs.Weight.MilliValue())
}

// PathShare is the weighted share of one node on a ClusterQueue's path up
// its cohort tree.
type PathShare struct {
	node *node
	name string
	// Share is the node's weighted share, per mille (see
	// berthv1alpha1.FairSharingStatus), unrounded: two shares are equal
	// only when they are, so that no rounding lets two queues take turns
	// preempting each other. +Inf for a node of weight 0 that borrows.
	Share float64
}

// WeightedShare is n's share of what its parent lends, per mille, divided
// by its weight: the largest, over resources, of its use above its own
// quota to what its parent could hold of the resource (its subtree's
// quota, and what it may borrow from above). 0 for a node that
// borrows nothing or has no parent; the largest int64 for one that
// borrows with weight 0.
func (n *node) WeightedShare() int64 {
	share := n.shareWith(nil)
	if share >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Ceil(share))
}

// shareWith is n's weighted share, unrounded, with delta added to its
// demand.
func (n *node) shareWith(delta map[resources.FlavorResource]int64) float64 {
	if n.parent == nil {
		return 0
	}
	borrowed := map[corev1.ResourceName]int64{}
	for fr, i := range n.index {
		q := &n.quotas[i]
		if b := plus(q.demand, delta[fr]) - q.subtree; b > 0 {
			borrowed[fr.Resource] = resources.Add(borrowed[fr.Resource], b)
		}
	}
	if len(borrowed) == 0 {
		return 0
	}
	if n.weight == 0 {
		return math.Inf(1)
	}
	// What the parent could hold: its subtree's quota and, in a nested
	// cohort, what it may borrow from above. A cohort without quota of its
	// own still shares out what it borrows.
	lendable := map[corev1.ResourceName]int64{}
	for fr := range n.parent.index {
		lendable[fr.Resource] = resources.Add(lendable[fr.Resource], n.parent.capacity(fr))
	}
	// Floating point: the ratio of two 64-bit amounts times a million
	// does not fit in 64 bits, and the share is an order, not an amount.
	var dominant float64
	for r, b := range borrowed {
		ratio := math.Inf(1)
		if l := lendable[r]; l > 0 {
			ratio = float64(b) / float64(l)
		}
		dominant = max(dominant, ratio)
	}
	return dominant * 1000 * defaultWeight / float64(n.weight)
}

// SharesWith is the weighted share that each node on cq's path would have
// with u added to cq's usage, from the node below the root down to cq.
// Fair sharing compares two ClusterQueues of a tree by the shares of their
// paths' nodes where the paths part.
func (cq *ClusterQueue) SharesWith(u resources.Usage) []PathShare {
	delta := make(map[resources.FlavorResource]int64, len(u))
	for fr, v := range u {
		delta[fr] = v
	}
	var out []PathShare
	for cur := &cq.node; cur.parent != nil; cur = &cur.parent.node {
		out = append(out, PathShare{node: cur, name: cur.name, Share: cur.shareWith(delta)})
		// What cur draws from its parent changes by the change of its
		// demand above what it guarantees itself.
		next := make(map[resources.FlavorResource]int64, len(delta))
		for fr, d := range delta {
			if q := cur.quota(fr); q != nil {
				before := max(0, q.demand-q.guaranteed)
				next[fr] = max(0, plus(q.demand, d)-q.guaranteed) - before
			}
		}
		delta = next
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Name names the node: "ClusterQueue a" or "cohort b".
func (p PathShare) Name() string { return p.name }

// Parting is the index at which two paths of shares (see SharesWith) part
// under a common cohort: where their nodes are siblings. ok is false when
// they do not, being of two trees, or one path the other's beginning.
func Parting(a, b []PathShare) (i int, ok bool) {
	for i = 0; i < len(a) && i < len(b); i++ {
		if a[i].node != b[i].node {
			return i, a[i].node.parent == b[i].node.parent
		}
	}
	return 0, false
}

// FairLess compares two paths of shares: less when a's node has the lower
// share where the paths part; decided is false when they do not part under
// a common cohort, or their shares there are equal.
func FairLess(a, b []PathShare) (less, decided bool) {
	i, ok := Parting(a, b)
	if !ok || a[i].Share == b[i].Share {
		return false, false
	}
	return a[i].Share < b[i].Share, true
}

// plus is a+d for a change d of either sign: resources.Add saturates a sum
// of amounts, which are never negative.
func plus(a, d int64) int64 {
	if d >= 0 {
		return resources.Add(a, d)
	}
	return a + d
}

// FormatShare is a weighted share as messages say it: per mille, rounded
// up as in status, and "endless (weight 0)" for the share of a queue of
// weight 0 that borrows.
func FormatShare(share float64) string {
	if math.IsInf(share, 1) {
		return "endless (weight 0)"
	}
	return strconv.FormatInt(int64(math.Ceil(share)), 10)
}
