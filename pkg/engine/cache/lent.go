package cache

import (
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// Lent is, per ClusterQueue in a cohort and per flavor and resource, how
// much of its quota other queues use: the part of its lendable quota it
// leaves unused, min(lendable, max(0, subtree - demand)) in the terms of
// the package comment, that borrowers anywhere in its cohort tree hold.
//
// The quota tree pools what children lend and does not say whose quota a
// borrower holds, so Lent spreads it, in each cohort: what the cohort's
// children use beyond their own quota, and what it lends on to its parent,
// is taken first from the cohort's own nominal quota, then from its
// ClusterQueues and then its child cohorts in name order; what a child
// cohort lends is spread the same way below it. Queues in no cohort lend
// nothing and are left out.
func (s *Snapshot) Lent() map[berthv1alpha1.ClusterQueueReference]resources.Usage {
	out := map[berthv1alpha1.ClusterQueueReference]resources.Usage{}
	for _, c := range s.Cohorts {
		if c.parent == nil {
			c.spreadLent(resources.Usage{}, out)
		}
	}
	return out
}

// spreadLent spreads over c's lenders what its children borrow and lent,
// what c lends outside its subtree, and records what each ClusterQueue
// lends in out.
func (c *Cohort) spreadLent(lent resources.Usage, out map[berthv1alpha1.ClusterQueueReference]resources.Usage) {
	owed := resources.Usage{}
	for fr, v := range lent {
		owed[fr] = v
	}
	for _, child := range c.children() {
		for fr, i := range child.index {
			q := &child.quotas[i]
			owed[fr] = resources.Add(owed[fr], max(0, q.demand-q.subtree))
		}
	}
	for fr, i := range c.index {
		owed[fr] = max(0, owed[fr]-c.quotas[i].nominal)
	}
	take := func(n *node) resources.Usage {
		got := resources.Usage{}
		for fr, i := range n.index {
			q := &n.quotas[i]
			if v := min(lendable(q), max(0, q.subtree-q.demand), owed[fr]); v > 0 {
				got[fr] = v
				owed[fr] -= v
			}
		}
		return got
	}
	for _, cq := range c.ClusterQueues {
		out[cq.Name] = take(&cq.node)
	}
	for _, child := range c.ChildCohorts {
		child.spreadLent(take(&child.node), out)
	}
}

// children are the nodes of c's ClusterQueues and child cohorts.
func (c *Cohort) children() []*node {
	out := make([]*node, 0, len(c.ClusterQueues)+len(c.ChildCohorts))
	for _, cq := range c.ClusterQueues {
		out = append(out, &cq.node)
	}
	for _, child := range c.ChildCohorts {
		out = append(out, &child.node)
	}
	return out
}
