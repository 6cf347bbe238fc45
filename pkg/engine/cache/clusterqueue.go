package cache

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// ResourceGroup is a ClusterQueue's resource group: resources whose quota
// is taken together from one flavor, and the flavors in order.
type ResourceGroup struct {
	CoveredResources []corev1.ResourceName
	Flavors          []berthv1alpha1.ResourceFlavorReference
}

// ClusterQueue is a node of the quota tree with the policy that admission
// needs. Outside a snapshot it is owned by the Cache and must not be used.
type ClusterQueue struct {
	node

	Name              berthv1alpha1.ClusterQueueReference
	ResourceGroups    []ResourceGroup
	Preemption        berthv1alpha1.ClusterQueuePreemption
	FlavorFungibility berthv1alpha1.FlavorFungibility
	QueueingStrategy  berthv1alpha1.QueueingStrategy
	// Inactive says why the queue admits nothing; empty when it is active.
	Inactive string

	workloads *workloadSet
	// reserved is usage held for preemptors waiting for their victims, in
	// a snapshot only: it takes room like usage, but the queue is not
	// borrowing because of it, so it gives nothing to reclaim.
	reserved resources.Usage
}

// Cohort is an inner node of the quota tree.
type Cohort struct {
	node

	Name          berthv1alpha1.CohortReference
	ChildCohorts  []*Cohort
	ClusterQueues []*ClusterQueue
	// Cycle, when set, is the cycle of parentName links the cohort is in,
	// e.g. "a -> b -> c -> a".
	Cycle string
}

// workloadSet is a copy-on-write set of workloads: a snapshot and the cache
// share the map until either writes to it.
type workloadSet struct {
	m      map[string]*workload.Info
	shared bool
}

func (s *workloadSet) writable() map[string]*workload.Info {
	if s.shared {
		s.m = maps.Clone(s.m)
		s.shared = false
	}
	return s.m
}

func (s *workloadSet) share() *workloadSet {
	s.shared = true
	return &workloadSet{m: s.m, shared: true}
}

// Workloads returns the workloads holding quota in the queue. The map must
// not be modified.
func (cq *ClusterQueue) Workloads() map[string]*workload.Info {
	return cq.workloads.m
}

// Cohort returns the queue's cohort, nil when it has none.
func (cq *ClusterQueue) Cohort() *Cohort {
	return cq.parent
}

// Root returns the root of the queue's cohort tree, nil without a cohort.
func (cq *ClusterQueue) Root() *Cohort {
	c := cq.parent
	for c != nil && c.parent != nil {
		c = c.parent
	}
	return c
}

// Available is how much more of fr the queue can use, borrowing included.
func (cq *ClusterQueue) Available(fr resources.FlavorResource) int64 {
	return cq.available(fr)
}

// Capacity is the most of fr the queue could ever hold: what would be
// available if no workload anywhere in its cohort tree held quota. A need
// above it fits neither now nor by preempting.
func (cq *ClusterQueue) Capacity(fr resources.FlavorResource) int64 {
	return cq.capacity(fr)
}

// Fits reports whether u can be added to the queue's usage.
func (cq *ClusterQueue) Fits(u resources.Usage) bool {
	for fr, v := range u {
		if v > 0 && v > cq.available(fr) {
			return false
		}
	}
	return true
}

// Covers reports whether the queue has quota for fr.
func (cq *ClusterQueue) Covers(fr resources.FlavorResource) bool {
	return cq.quota(fr) != nil
}

// Used is the queue's usage of fr by workloads, without reservations.
func (cq *ClusterQueue) Used(fr resources.FlavorResource) int64 {
	if q := cq.quota(fr); q != nil {
		return q.demand - cq.reserved[fr]
	}
	return 0
}

// Reserve holds u in the queue for a preemptor that waits for its victims:
// no other workload may take it. Unreserve gives it back.
func (cq *ClusterQueue) Reserve(u resources.Usage) {
	if cq.reserved == nil {
		cq.reserved = resources.Usage{}
	}
	for fr, v := range u {
		cq.reserved[fr] = resources.Add(cq.reserved[fr], v)
	}
	cq.addUsage(u, 1)
}

// Unreserve gives back what Reserve held.
func (cq *ClusterQueue) Unreserve(u resources.Usage) {
	for fr, v := range u {
		cq.reserved[fr] -= v
	}
	cq.addUsage(u, -1)
}

// Nominal is the queue's nominal quota of fr.
func (cq *ClusterQueue) Nominal(fr resources.FlavorResource) int64 {
	if q := cq.quota(fr); q != nil {
		return q.nominal
	}
	return 0
}

// IsBorrowing reports whether the queue's workloads use more than its
// nominal quota of any flavor and resource.
func (cq *ClusterQueue) IsBorrowing() bool {
	for fr := range cq.index {
		if cq.IsBorrowingIn(fr) {
			return true
		}
	}
	return false
}

// IsBorrowingIn reports whether the queue's workloads use more than its
// nominal quota of fr.
func (cq *ClusterQueue) IsBorrowingIn(fr resources.FlavorResource) bool {
	q := cq.quota(fr)
	return q != nil && q.demand-cq.reserved[fr] > q.nominal
}

// QuotaDetail is the arithmetic behind Available, for messages.
type QuotaDetail struct {
	Nominal int64
	Used    int64
	// Reserved is held for a preemptor of the queue waiting for its victims.
	Reserved  int64
	Available int64
	// CohortCanLend is what the cohort could give beyond the queue's own
	// unused guaranteed quota, before the borrowing limit.
	CohortCanLend int64
	// BorrowingLimit is nil when the queue may borrow all the cohort lends.
	BorrowingLimit *int64
	// HasCohort is false for a queue without a cohort: nothing to borrow.
	HasCohort bool
}

// Detail returns the quota arithmetic of fr.
func (cq *ClusterQueue) Detail(fr resources.FlavorResource) QuotaDetail {
	q := cq.quota(fr)
	if q == nil {
		return QuotaDetail{}
	}
	d := QuotaDetail{Nominal: q.nominal, Used: q.demand - cq.reserved[fr], Reserved: cq.reserved[fr], Available: cq.available(fr)}
	if cq.parent != nil {
		d.HasCohort = true
		d.CohortCanLend = cq.parent.available(fr)
		if q.borrowingLimit != unlimited {
			bl := q.borrowingLimit
			d.BorrowingLimit = &bl
		}
	}
	return d
}

// AllClusterQueues returns the queues under c, depth first.
func (c *Cohort) AllClusterQueues() []*ClusterQueue {
	out := append([]*ClusterQueue(nil), c.ClusterQueues...)
	for _, child := range c.ChildCohorts {
		out = append(out, child.AllClusterQueues()...)
	}
	return out
}

func newClusterQueue(obj *berthv1alpha1.ClusterQueue, flavors map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor,
	checks map[berthv1alpha1.AdmissionCheckReference]string) *ClusterQueue {
	spec := &obj.Spec
	cq := &ClusterQueue{
		Name:              berthv1alpha1.ClusterQueueReference(obj.Name),
		Preemption:        withPreemptionDefaults(spec.Preemption),
		FlavorFungibility: withFungibilityDefaults(spec.FlavorFungibility),
		QueueingStrategy:  spec.QueueingStrategy,
	}
	if cq.QueueingStrategy == "" {
		cq.QueueingStrategy = berthv1alpha1.BestEffortFIFO
	}
	for _, rg := range spec.ResourceGroups {
		g := ResourceGroup{CoveredResources: rg.CoveredResources}
		for _, f := range rg.Flavors {
			g.Flavors = append(g.Flavors, f.Name)
			if _, ok := flavors[f.Name]; !ok && cq.Inactive == "" {
				cq.Inactive = fmt.Sprintf("ClusterQueue %s is inactive: ResourceFlavor %s not found", obj.Name, f.Name)
			}
		}
		cq.ResourceGroups = append(cq.ResourceGroups, g)
	}
	if cq.Inactive == "" {
		cq.Inactive = inactiveCheck(obj, checks)
	}
	switch {
	case obj.DeletionTimestamp != nil:
		cq.Inactive = fmt.Sprintf("ClusterQueue %s is terminating", obj.Name)
	case spec.StopPolicy != "" && spec.StopPolicy != berthv1alpha1.None:
		cq.Inactive = fmt.Sprintf("ClusterQueue %s is stopped (stopPolicy %s)", obj.Name, spec.StopPolicy)
	}
	cq.setQuotas(spec.ResourceGroups)
	cq.weight = weightOf(spec.FairSharing)
	cq.name = "ClusterQueue " + obj.Name
	return cq
}

// inactiveCheck says which admission check of obj does not exist or is
// not active, if one: the queue reserves no quota for workloads that
// could never pass it.
func inactiveCheck(obj *berthv1alpha1.ClusterQueue, checks map[berthv1alpha1.AdmissionCheckReference]string) string {
	for _, name := range workload.ChecksNamed(obj) {
		why, ok := checks[name]
		switch {
		case !ok:
			return fmt.Sprintf("ClusterQueue %s is inactive: AdmissionCheck %s not found", obj.Name, name)
		case why != "":
			return fmt.Sprintf("ClusterQueue %s is inactive: AdmissionCheck %s is not active: %s", obj.Name, name, why)
		}
	}
	return ""
}

func withPreemptionDefaults(p berthv1alpha1.ClusterQueuePreemption) berthv1alpha1.ClusterQueuePreemption {
	if p.WithinClusterQueue == "" {
		p.WithinClusterQueue = berthv1alpha1.PreemptionPolicyNever
	}
	if p.ReclaimWithinCohort == "" {
		p.ReclaimWithinCohort = berthv1alpha1.PreemptionPolicyNever
	}
	if p.BorrowWithinCohort.Policy == "" {
		p.BorrowWithinCohort.Policy = berthv1alpha1.PreemptionPolicyNever
	}
	return p
}

func withFungibilityDefaults(f berthv1alpha1.FlavorFungibility) berthv1alpha1.FlavorFungibility {
	if f.WhenCanBorrow == "" {
		f.WhenCanBorrow = berthv1alpha1.MayStopSearch
	}
	if f.WhenCanPreempt == "" {
		f.WhenCanPreempt = berthv1alpha1.TryNextFlavor
	}
	return f
}

// AddUsage adds u to the queue's usage, for simulations on a snapshot.
func (cq *ClusterQueue) AddUsage(u resources.Usage) {
	cq.addUsage(u, 1)
}

// RemoveUsage removes u from the queue's usage, for simulations on a
// snapshot.
func (cq *ClusterQueue) RemoveUsage(u resources.Usage) {
	cq.addUsage(u, -1)
}
