package cache

import (
	"math"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// unlimited stands for an absent borrowing limit. It is far enough from
// MaxInt64 that adding a quota to it cannot overflow.
const unlimited = math.MaxInt64 / 4

// frQuota is one node's quota and demand for one flavor and resource.
type frQuota struct {
	nominal        int64
	borrowingLimit int64 // unlimited when absent
	lendingLimit   int64 // subtree when absent
	hasLending     bool

	subtree    int64
	guaranteed int64
	demand     int64
}

// node is the part of ClusterQueues and Cohorts that holds quota. index is
// built with the tree and never mutated afterwards, so snapshots share it;
// quotas is copied.
type node struct {
	parent *Cohort
	index  map[resources.FlavorResource]int
	quotas []frQuota
	// generation counts usage changes in the whole tree; only the root's
	// counter is used. It lets the scheduler reuse a decision computed
	// against an unchanged tree.
	generation int64
	// weight is the node's fair-sharing weight, in thousandths.
	weight int64
	// name is how messages name the node: "ClusterQueue a", "cohort b".
	name string
}

func (n *node) root() *node {
	r := n
	for r.parent != nil {
		r = &r.parent.node
	}
	return r
}

// TreeGeneration changes whenever usage changes anywhere in n's cohort tree.
func (n *node) TreeGeneration() int64 {
	return n.root().generation
}

func (n *node) quota(fr resources.FlavorResource) *frQuota {
	if i, ok := n.index[fr]; ok {
		return &n.quotas[i]
	}
	return nil
}

// available is how much more of fr n's subtree can use.
func (n *node) available(fr resources.FlavorResource) int64 {
	q := n.quota(fr)
	if q == nil {
		// Only reached for a resource outside the tree: nothing to use.
		return 0
	}
	local := max(0, q.guaranteed-q.demand)
	if n.parent == nil {
		return local
	}
	a := resources.Add(local, n.parent.available(fr))
	if limit := q.subtree + q.borrowingLimit - q.demand; a > limit {
		a = limit
	}
	return max(0, a)
}

// capacity is the most of fr that n could hold if nothing else in the tree
// held any: available with no demand anywhere, within every borrowing
// limit on the way up.
func (n *node) capacity(fr resources.FlavorResource) int64 {
	q := n.quota(fr)
	if q == nil {
		return 0
	}
	if n.parent == nil {
		return q.guaranteed
	}
	return min(resources.Add(q.guaranteed, n.parent.capacity(fr)), resources.Add(q.subtree, q.borrowingLimit))
}

// addDemand adds delta to n's demand for fr and carries the change of what
// n draws from its parent up the tree.
func (n *node) addDemand(fr resources.FlavorResource, delta int64) {
	for cur := n; cur != nil && delta != 0; {
		q := cur.quota(fr)
		if q == nil {
			return
		}
		before := max(0, q.demand-q.guaranteed)
		if delta > 0 {
			q.demand = resources.Add(q.demand, delta)
		} else {
			q.demand += delta
		}
		delta = max(0, q.demand-q.guaranteed) - before
		if cur.parent == nil {
			return
		}
		cur = &cur.parent.node
	}
}

// addUsage applies u (negated when sign is -1) to n and its ancestors.
func (n *node) addUsage(u resources.Usage, sign int64) {
	for fr, v := range u {
		n.addDemand(fr, sign*v)
	}
	n.root().generation++
}

// setQuotas fills n's own quota from resource groups, leaving room for the
// flavor/resources of its children (already in index).
func (n *node) setQuotas(rgs berthv1alpha1.ResourceGroups) {
	for _, rg := range rgs {
		for _, f := range rg.Flavors {
			for _, r := range f.Resources {
				fr := resources.FlavorResource{Flavor: f.Name, Resource: r.Name}
				q := n.ensure(fr)
				q.nominal = resources.Value(r.Name, r.NominalQuota)
				if r.BorrowingLimit != nil {
					q.borrowingLimit = resources.Value(r.Name, *r.BorrowingLimit)
				}
				if r.LendingLimit != nil {
					q.hasLending = true
					q.lendingLimit = resources.Value(r.Name, *r.LendingLimit)
				}
			}
		}
	}
}

func (n *node) ensure(fr resources.FlavorResource) *frQuota {
	if n.index == nil {
		n.index = map[resources.FlavorResource]int{}
	}
	if i, ok := n.index[fr]; ok {
		return &n.quotas[i]
	}
	n.index[fr] = len(n.quotas)
	n.quotas = append(n.quotas, frQuota{borrowingLimit: unlimited})
	return &n.quotas[len(n.quotas)-1]
}

// lendable is what n lends its parent of quota q.
func lendable(q *frQuota) int64 {
	if q.hasLending {
		return min(q.lendingLimit, q.subtree)
	}
	return q.subtree
}

// finishQuota computes subtree and guaranteed of n once its children are
// done; children holds their nodes.
func (n *node) finishQuota(children []*node) {
	for _, c := range children {
		for fr, i := range c.index {
			q := n.ensure(fr)
			q.subtree = resources.Add(q.subtree, lendable(&c.quotas[i]))
		}
	}
	for i := range n.quotas {
		q := &n.quotas[i]
		q.subtree = resources.Add(q.subtree, q.nominal)
		q.guaranteed = q.subtree
		if n.parent != nil {
			q.guaranteed = q.subtree - lendable(q)
		}
	}
}

// finishDemand computes a cohort's demand from its children's.
func (n *node) finishDemand(children []*node) {
	for _, c := range children {
		for fr, i := range c.index {
			q := &c.quotas[i]
			d := n.ensure(fr)
			d.demand = resources.Add(d.demand, max(0, q.demand-q.guaranteed))
		}
	}
}

func (n *node) clone(parent *Cohort) node {
	return node{
		parent:     parent,
		index:      n.index,
		quotas:     append([]frQuota(nil), n.quotas...),
		generation: n.generation,
		weight:     n.weight,
		name:       n.name,
	}
}
