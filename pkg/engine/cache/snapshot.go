package cache

import (
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Snapshot is a frozen copy of the cache for one scheduling cycle. It is
// not safe for concurrent use; a cycle owns it and may mutate it to
// simulate admissions and preemptions.
type Snapshot struct {
	ClusterQueues   map[berthv1alpha1.ClusterQueueReference]*ClusterQueue
	Cohorts         map[berthv1alpha1.CohortReference]*Cohort
	ResourceFlavors map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor
	// FairSharing is set by a scheduler that shares fairly: a queue may
	// then preempt another's borrowed workloads to borrow, when the
	// shares allow it (see the preemption package).
	FairSharing bool
	// FairStrategies are the rules of fair-sharing preemption, in the
	// order they are tried.
	FairStrategies []configv1alpha1.PreemptionStrategy

	// Fabrics are the nodes of the flavors that name a Topology, by flavor,
	// less what admitted pods take; nil without such flavors.
	Fabrics map[berthv1alpha1.ResourceFlavorReference]*topology.Fabric
	// fabricGeneration counts the placements taken from Fabrics.
	fabricGeneration int64

	// added holds the keys of workloads added after the snapshot was taken.
	added map[string]bool
	// claimed holds the keys of victims whose quota a preemptor of this
	// cycle counts on.
	claimed map[string]bool
}

// snapshot copies t. Workload sets are shared copy-on-write.
func (t *tree) snapshot(flavors map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor) *Snapshot {
	s := &Snapshot{
		ClusterQueues:   make(map[berthv1alpha1.ClusterQueueReference]*ClusterQueue, len(t.clusterQueues)),
		Cohorts:         make(map[berthv1alpha1.CohortReference]*Cohort, len(t.cohorts)),
		ResourceFlavors: make(map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor, len(flavors)),
	}
	for name, rf := range flavors {
		s.ResourceFlavors[name] = rf
	}
	for _, c := range t.cohorts {
		if c.parent == nil {
			s.copyCohort(c, nil)
		}
	}
	for name, cq := range t.clusterQueues {
		if cq.parent == nil {
			s.ClusterQueues[name] = cq.copy(nil)
		}
	}
	return s
}

func (s *Snapshot) copyCohort(c *Cohort, parent *Cohort) *Cohort {
	out := &Cohort{
		node:          c.clone(parent),
		Name:          c.Name,
		ChildCohorts:  make([]*Cohort, 0, len(c.ChildCohorts)),
		ClusterQueues: make([]*ClusterQueue, 0, len(c.ClusterQueues)),
	}
	s.Cohorts[c.Name] = out
	for _, child := range c.ChildCohorts {
		out.ChildCohorts = append(out.ChildCohorts, s.copyCohort(child, out))
	}
	for _, cq := range c.ClusterQueues {
		cp := cq.copy(out)
		out.ClusterQueues = append(out.ClusterQueues, cp)
		s.ClusterQueues[cq.Name] = cp
	}
	return out
}

func (cq *ClusterQueue) copy(parent *Cohort) *ClusterQueue {
	out := *cq
	out.node = cq.clone(parent)
	out.workloads = cq.workloads.share()
	return &out
}

// AddWorkload adds info, holding quota in its ClusterQueue, to the
// snapshot. It does nothing if the queue is unknown.
func (s *Snapshot) AddWorkload(info *workload.Info) {
	cq := s.ClusterQueues[info.ClusterQueue]
	if cq == nil {
		return
	}
	cq.workloads.writable()[info.Key] = info
	cq.addUsage(info.Usage, 1)
	if s.added == nil {
		s.added = map[string]bool{}
	}
	s.added[info.Key] = true
}

// Place takes the nodes of info's placements from the snapshot's fabrics,
// so that later heads of the cycle find them taken.
func (s *Snapshot) Place(info *workload.Info) {
	for _, p := range info.Placements {
		if f := s.Fabrics[p.Flavor]; f != nil {
			f.Take(topology.FromAPI(p.Assignment), p.PerPod, nil)
			s.fabricGeneration++
		}
	}
}

// Reserve keeps the nodes of a, in flavor f's fabric, from the later heads
// of the cycle: a preemptor's, while its victims stop.
func (s *Snapshot) Reserve(f berthv1alpha1.ResourceFlavorReference, a *topology.Assignment, perPod resources.Requests) {
	if fab := s.Fabrics[f]; fab != nil {
		fab.Take(a, perPod, nil)
		s.fabricGeneration++
	}
}

// FabricGeneration changes whenever Place takes from the fabrics: an
// assignment made before then may name nodes another head took.
func (s *Snapshot) FabricGeneration() int64 { return s.fabricGeneration }

// AddedInCycle reports whether the workload with key was added to the
// snapshot after it was taken: admitted in the current cycle.
func (s *Snapshot) AddedInCycle(key string) bool {
	return s.added[key]
}

// RemoveWorkload removes info from the snapshot, releasing its quota.
func (s *Snapshot) RemoveWorkload(info *workload.Info) {
	cq := s.ClusterQueues[info.ClusterQueue]
	if cq == nil {
		return
	}
	if _, ok := cq.workloads.m[info.Key]; !ok {
		return
	}
	delete(cq.workloads.writable(), info.Key)
	cq.addUsage(info.Usage, -1)
}

// Contains reports whether the workload with key holds quota in cq.
func (s *Snapshot) Contains(cq berthv1alpha1.ClusterQueueReference, key string) bool {
	c := s.ClusterQueues[cq]
	if c == nil {
		return false
	}
	_, ok := c.workloads.m[key]
	return ok
}

// Held is the quota the workload with key holds in cq, nil when it holds
// none.
func (s *Snapshot) Held(cq berthv1alpha1.ClusterQueueReference, key string) resources.Usage {
	c := s.ClusterQueues[cq]
	if c == nil {
		return nil
	}
	if info, ok := c.workloads.m[key]; ok {
		return info.Usage
	}
	return nil
}

// MarkEvicting records in the snapshot that info was told to stop. Its
// quota stays in use until the cache says it is gone, so nothing is handed
// out twice; later preemptors of the cycle count on it instead of
// preempting more.
func (s *Snapshot) MarkEvicting(info *workload.Info) {
	cq := s.ClusterQueues[info.ClusterQueue]
	if cq == nil {
		return
	}
	if _, ok := cq.workloads.m[info.Key]; !ok {
		return
	}
	cp := *info
	cp.Evicting = true
	cq.workloads.writable()[info.Key] = &cp
}

// Claim records that a preemptor of this cycle counts on the quota of the
// workload with key, so that no other preemptor counts on it too.
func (s *Snapshot) Claim(key string) {
	if s.claimed == nil {
		s.claimed = map[string]bool{}
	}
	s.claimed[key] = true
}

// Claimed reports whether a preemptor of this cycle counts on the quota of
// the workload with key.
func (s *Snapshot) Claimed(key string) bool {
	return s.claimed[key]
}
