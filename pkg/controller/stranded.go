package controller

import (
	"context"
	"time"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/metrics"
)

// strandedSampler measures the fabric's fragmentation every interval:
// for each flavor with a Topology and each level a waiting gang requires,
// what the nodes have free in domains too small for the smallest such gang
// (berth_topology_stranded_resources). It reads a snapshot of the cache
// and of the queues, as a cycle does, and runs on the leader only.
type strandedSampler struct {
	cache    *cache.Cache
	queues   *queue.Manager
	interval time.Duration
}

// Start samples until ctx ends.
func (s *strandedSampler) Start(ctx context.Context) error {
	return sampleEvery(ctx, s.interval, func(time.Time) { s.sample() })
}

// strandedKey is a flavor and a level of its Topology.
type strandedKey struct {
	flavor berthv1alpha1.ResourceFlavorReference
	level  int
}

func (s *strandedSampler) sample() {
	snap := s.cache.Snapshot()
	metrics.TopologyStrandedResources.Reset()
	if len(snap.Fabrics) == 0 {
		return
	}
	// The fewest resources stranded for any waiting gang: the smallest
	// gang's view, where each gang of another shape strands more.
	least := map[strandedKey]resources.Requests{}
	for name, cq := range snap.ClusterQueues {
		pending, ok := s.queues.Snapshot(name)
		if !ok {
			continue
		}
		pending.Walk(func(info *workload.Info) bool {
			for i := range info.PodSets {
				ps := &info.PodSets[i]
				if !ps.Topology.Required || ps.TopologyError != nil {
					continue
				}
				for _, rg := range cq.ResourceGroups {
					for _, f := range rg.Flavors {
						fab := snap.Fabrics[f]
						if fab == nil || fab.Level(ps.Topology.Level) < 0 {
							continue
						}
						k := strandedKey{f, fab.Level(ps.Topology.Level)}
						got := fab.Stranded(topology.Request{PerPod: workload.PodWithRequests(ps.PerPod), Count: ps.Count, Level: k.level, Required: true,
							NodeSelector: ps.NodeSelector, Tolerations: ps.Tolerations})
						if cur, seen := least[k]; !seen {
							least[k] = got
						} else {
							for r, v := range cur {
								cur[r] = min(v, got[r])
							}
						}
					}
				}
			}
			return true
		})
	}
	for k, stranded := range least {
		level := snap.Fabrics[k.flavor].Levels()[k.level]
		for r, v := range stranded {
			if r == "pods" {
				continue
			}
			metrics.TopologyStrandedResources.WithLabelValues(string(k.flavor), level, string(r)).Set(amount(r, v))
		}
	}
}
