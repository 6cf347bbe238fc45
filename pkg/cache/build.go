package cache

import (
	"sort"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/resources"
	"github.com/berth-dev/berth/pkg/workload"
)

// cqState is what the cache keeps per ClusterQueue name across rebuilds of
// the tree: the workloads holding its quota and their total usage. It
// exists as soon as a workload names the queue, even before the queue.
type cqState struct {
	workloads workloadSet
	usage     resources.Usage
}

func newCQState() *cqState {
	return &cqState{workloads: workloadSet{m: map[string]*workload.Info{}}, usage: resources.Usage{}}
}

// tree is the quota tree built from the API objects.
type tree struct {
	clusterQueues map[berthv1alpha1.ClusterQueueReference]*ClusterQueue
	cohorts       map[berthv1alpha1.CohortReference]*Cohort
}

type treeInputs struct {
	clusterQueues map[berthv1alpha1.ClusterQueueReference]*berthv1alpha1.ClusterQueue
	cohorts       map[berthv1alpha1.CohortReference]*berthv1alpha1.Cohort
	flavors       map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor
	states        map[berthv1alpha1.ClusterQueueReference]*cqState
}

// buildTree builds the quota tree. A cohort exists when an object or a
// queue names it. A parent link that would close a cycle is dropped, which
// makes that cohort a root: quota never flows around a loop.
func buildTree(in treeInputs) *tree {
	t := &tree{
		clusterQueues: make(map[berthv1alpha1.ClusterQueueReference]*ClusterQueue, len(in.clusterQueues)),
		cohorts:       map[berthv1alpha1.CohortReference]*Cohort{},
	}
	cohortOf := func(name berthv1alpha1.CohortReference) *Cohort {
		c, ok := t.cohorts[name]
		if !ok {
			c = &Cohort{Name: name}
			t.cohorts[name] = c
		}
		return c
	}
	for _, name := range sortedKeys(in.cohorts) {
		obj := in.cohorts[name]
		c := cohortOf(name)
		c.setQuotas(obj.Spec.ResourceGroups)
		if p := obj.Spec.ParentName; p != "" {
			parent := cohortOf(p)
			if !parent.hasAncestor(c) {
				c.parent = parent
				parent.ChildCohorts = append(parent.ChildCohorts, c)
			}
		}
	}
	for _, name := range sortedKeys(in.clusterQueues) {
		obj := in.clusterQueues[name]
		cq := newClusterQueue(obj, in.flavors)
		st, ok := in.states[name]
		if !ok {
			st = newCQState()
			in.states[name] = st
		}
		cq.workloads = &st.workloads
		for fr, v := range st.usage {
			if q := cq.quota(fr); q != nil {
				q.demand = v
			}
		}
		if obj.Spec.CohortName != "" {
			c := cohortOf(obj.Spec.CohortName)
			cq.parent = c
			c.ClusterQueues = append(c.ClusterQueues, cq)
		}
		t.clusterQueues[name] = cq
	}
	for _, c := range t.cohorts {
		if c.parent == nil {
			c.finish()
		}
	}
	for _, cq := range t.clusterQueues {
		if cq.parent == nil {
			cq.finishQuota(nil)
		}
	}
	return t
}

// hasAncestor reports whether a is c or one of its ancestors.
func (c *Cohort) hasAncestor(a *Cohort) bool {
	for cur := c; cur != nil; cur = cur.parent {
		if cur == a {
			return true
		}
	}
	return false
}

// finish computes the quota and demand of c's subtree, children first.
func (c *Cohort) finish() {
	children := make([]*node, 0, len(c.ChildCohorts)+len(c.ClusterQueues))
	for _, child := range c.ChildCohorts {
		child.finish()
		children = append(children, &child.node)
	}
	for _, cq := range c.ClusterQueues {
		cq.finishQuota(nil)
		children = append(children, &cq.node)
	}
	c.finishQuota(children)
	c.finishDemand(children)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
