package cache

import (
	"fmt"
	"sort"
	"strings"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
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
	// checks holds, per AdmissionCheck, why it is not active ("" when it
	// is).
	checks map[berthv1alpha1.AdmissionCheckReference]string
	states map[berthv1alpha1.ClusterQueueReference]*cqState
}

// buildTree builds the quota tree. A cohort exists when an object or a
// queue names it. A parent link that would close a cycle is dropped, which
// makes that cohort a root: quota never flows around a loop. The cohorts of
// the cycle remember it, and every ClusterQueue under them is inactive
// until the cycle is broken: which link was dropped depends only on names,
// and a person must be told.
func buildTree(in treeInputs) *tree {
	t := &tree{
		clusterQueues: make(map[berthv1alpha1.ClusterQueueReference]*ClusterQueue, len(in.clusterQueues)),
		cohorts:       map[berthv1alpha1.CohortReference]*Cohort{},
	}
	cohortOf := func(name berthv1alpha1.CohortReference) *Cohort {
		c, ok := t.cohorts[name]
		if !ok {
			c = &Cohort{Name: name, node: node{weight: defaultWeight, name: "cohort " + string(name)}}
			t.cohorts[name] = c
		}
		return c
	}
	t.linkCohorts(in.cohorts, cohortOf)
	for _, name := range sortedKeys(in.clusterQueues) {
		obj := in.clusterQueues[name]
		cq := newClusterQueue(obj, in.flavors, in.checks)
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
		if cycle := cq.cohortCycle(); cycle != "" {
			cq.Inactive = fmt.Sprintf("ClusterQueue %s is inactive: the parentName links of its cohorts form a cycle (%s); break it to make the queue active", name, cycle)
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

// linkCohorts gives each Cohort object its quota and its parent, leaving
// out a link that would close a cycle.
func (t *tree) linkCohorts(objs map[berthv1alpha1.CohortReference]*berthv1alpha1.Cohort, cohortOf func(berthv1alpha1.CohortReference) *Cohort) {
	for _, name := range sortedKeys(objs) {
		obj := objs[name]
		c := cohortOf(name)
		c.setQuotas(obj.Spec.ResourceGroups)
		c.weight = weightOf(obj.Spec.FairSharing)
		if p := obj.Spec.ParentName; p != "" {
			parent := cohortOf(p)
			if parent.hasAncestor(c) {
				markCycle(c, parent)
			} else {
				c.parent = parent
				parent.ChildCohorts = append(parent.ChildCohorts, c)
			}
		}
	}
}

// markCycle records on every cohort of the cycle that c's parent link to
// parent would close: parent, its ancestors up to c, and c. The cycle is
// written from its least name, so that it reads the same whichever link
// was dropped.
func markCycle(c, parent *Cohort) {
	// In link order: c links to parent, each cohort to its parent, and
	// the last one to c.
	members := []*Cohort{c}
	for cur := parent; cur != c; cur = cur.parent {
		members = append(members, cur)
	}
	start := 0
	for i, m := range members {
		if m.Name < members[start].Name {
			start = i
		}
	}
	names := make([]string, 0, len(members)+1)
	for i := range members {
		names = append(names, string(members[(start+i)%len(members)].Name))
	}
	names = append(names, names[0])
	cycle := strings.Join(names, " -> ")
	for _, m := range members {
		m.Cycle = cycle
	}
}

// cohortCycle is the cycle of the first cohort above cq that is in one,
// empty when none is.
func (cq *ClusterQueue) cohortCycle() string {
	for c := cq.parent; c != nil; c = c.parent {
		if c.Cycle != "" {
			return c.Cycle
		}
	}
	return ""
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
