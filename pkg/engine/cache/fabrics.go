package cache

import (
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/topology"
)

// Fabrics is where the cache gets the nodes of the flavors that name a
// Topology, for each snapshot.
type Fabrics interface {
	// Fabric is a copy of the fabric of rf's nodes that the cycle may
	// change, each node's free resources its allocatable less the requests
	// of the pods bound to it; nil when there is none (no Topology of that
	// name).
	Fabric(rf *berthv1alpha1.ResourceFlavor) *topology.Fabric
	// Bound is how many pods of the workload with key each node has, a
	// map the caller may change.
	Bound(key string) map[string]int32
}

// SetFabrics has snapshots hold the fabrics of the flavors that name a
// Topology, less what admitted workloads' pods not yet bound will take.
func (c *Cache) SetFabrics(f Fabrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fabrics = f
}

// addFabrics puts in s the fabric of each flavor that names a Topology,
// less what the pods of admitted workloads that are not bound yet will
// take.
func (c *Cache) addFabrics(s *Snapshot) {
	for name, rf := range c.in.flavors {
		if rf.Spec.TopologyName == nil {
			continue
		}
		if f := c.fabrics.Fabric(rf); f != nil {
			if s.Fabrics == nil {
				s.Fabrics = map[berthv1alpha1.ResourceFlavorReference]*topology.Fabric{}
			}
			s.Fabrics[name] = f
		}
	}
	if s.Fabrics == nil {
		return
	}
	for key, info := range c.placed {
		bound := c.fabrics.Bound(key)
		for _, p := range info.Placements {
			if f := s.Fabrics[p.Flavor]; f != nil {
				f.Take(topology.FromAPI(p.Assignment), p.PerPod, bound)
			}
		}
	}
}
