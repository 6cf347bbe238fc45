package preemption

import (
	"fmt"
	"slices"
	"strings"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/scheduler/flavorassigner"
	"github.com/berth-dev/berth/pkg/engine/topology"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// defragTargets frees a domain for a gang whose quota fits but which no
// domain of its flavor's fabric has room for. The victims are workloads
// of its own queue placed in that fabric that withinClusterQueue allows
// it to preempt: another queue's work on those nodes is within that
// queue's quota, which is not the preemptor's to take. For each domain of
// the required level it takes candidates in preemption's order (already
// evicting first, then lower priority, then the most recently admitted),
// those with pods in the domain only, until the gang fits there; it
// chooses the domain that needs the fewest new evictions, then the one
// whose victims have the lowest priority, then the fabric's first.
func defragTargets(s *cache.Snapshot, cq *cache.ClusterQueue, wl *workload.Info, d *flavorassigner.Defrag) (targets []Target, late bool) {
	fab := s.Fabrics[d.Flavor]
	if fab == nil || d.Request.Level < 0 {
		return nil, false
	}
	type placed struct {
		c candidate
		p *workload.Placement
	}
	var cands []placed
	for _, info := range cq.Workloads() {
		if s.Claimed(info.Key) || (!info.Evicting && !allowedWithin(cq.Preemption.WithinClusterQueue, wl, info)) {
			continue
		}
		for i := range info.Placements {
			if p := &info.Placements[i]; p.Flavor == d.Flavor {
				if s.AddedInCycle(info.Key) {
					return nil, true
				}
				cands = append(cands, placed{candidate{info: info, cq: cq, reason: berthv1alpha1.ReasonInClusterQueue}, p})
			}
		}
	}
	slices.SortFunc(cands, func(a, b placed) int {
		switch {
		case before(a.c, b.c, cq, nil):
			return -1
		case before(b.c, a.c, cq, nil):
			return 1
		}
		return 0
	})
	var best []placed
	var bestDomain []string
	var planned *topology.Assignment
	bestNew, bestPriority := -1, int32(0)
	for _, dom := range fab.Domains(d.Request.Level) {
		freed := fab.Clone()
		req := d.Request
		req.Within = dom
		var victims []placed
		newOnes, top := 0, int32(0)
		var fits *topology.Assignment
		for _, c := range cands {
			if !inDomain(c.p.Assignment, dom) {
				continue
			}
			freed.Release(topology.FromAPI(c.p.Assignment), c.p.PerPod)
			victims = append(victims, c)
			if !c.c.info.Evicting {
				newOnes++
				top = max(top, c.c.info.Priority)
			}
			if a, m := freed.Find(req); m == nil {
				fits = a
				break
			}
			if bestNew >= 0 && newOnes > bestNew {
				break
			}
		}
		if fits == nil {
			continue
		}
		if bestNew < 0 || newOnes < bestNew || newOnes == bestNew && top < bestPriority {
			best, bestDomain, bestNew, bestPriority, planned = victims, dom, newOnes, top, fits
		}
	}
	d.Planned = planned
	why := fmt.Sprintf("to free %s %s for its podset %s (%d pods), which no %s had room for",
		fab.Levels()[d.Request.Level], strings.Join(bestDomain, "/"), d.PodSet, d.Request.Count, fab.Levels()[d.Request.Level])
	for _, v := range best {
		targets = append(targets, Target{Info: v.c.info, Reason: v.c.reason, Why: why})
	}
	return targets, false
}

// inDomain reports whether any pod of a lies in the domain with values.
func inDomain(a *berthv1alpha1.TopologyAssignment, values []string) bool {
	for _, d := range a.Domains {
		if len(d.Values) >= len(values) && slices.Equal(d.Values[:len(values)], values) {
			return true
		}
	}
	return false
}
