package flavorassigner

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Assign chooses flavors for wl in cq. When the full counts do not fit
// outright and a podset allows partial admission, it looks for the largest
// counts that fit outright; failing that it returns the full-count result,
// which may need preemption. Partial admission is not combined with
// preemption.
func Assign(s *cache.Snapshot, cq *cache.ClusterQueue, wl *workload.Info) *Assignment {
	return assignCounts(s, cq, wl, true)
}

// AssignWithoutPreemption is Assign for when preempting found no victims:
// a flavor that needs preemption does not fit, so the search goes on to
// the next flavor even where the queue's whenCanPreempt would stop it.
// Without it, a workload that preempting cannot help would wait in its
// first flavor forever beside a later one that has room.
func AssignWithoutPreemption(s *cache.Snapshot, cq *cache.ClusterQueue, wl *workload.Info) *Assignment {
	return assignCounts(s, cq, wl, false)
}

func assignCounts(s *cache.Snapshot, cq *cache.ClusterQueue, wl *workload.Info, preempt bool) *Assignment {
	full := assign(s, cq, wl, scale{}, preempt)
	if full.Mode >= Borrow || !partial(wl) {
		return full
	}
	// Binary search the largest step k in [0, steps) whose counts fit; the
	// counts grow monotonically with k, and so does usage.
	sc := scale{steps: maxRange(wl)}
	lo, hi := 0, sc.steps-1
	var best *Assignment
	for lo <= hi {
		sc.k = (lo + hi) / 2
		// Partial admission never preempts: a flavor it would need
		// preemption in does not stop the search.
		a := assign(s, cq, wl, sc, false)
		if a.Mode >= Borrow {
			best, lo = a, sc.k+1
		} else {
			hi = sc.k - 1
		}
	}
	if best == nil {
		return full
	}
	return best
}

// scale reduces the counts of partially admissible podsets: step k of
// steps gives minCount + (count-minCount)*k/steps. The zero scale is the
// full count.
type scale struct{ k, steps int }

func (sc scale) count(ps *workload.PodSetInfo) int32 {
	if sc.steps == 0 || ps.MinCount >= ps.Count {
		return ps.Count
	}
	r := int64(ps.Count - ps.MinCount)
	return ps.MinCount + int32(r*int64(sc.k)/int64(sc.steps))
}

func partial(wl *workload.Info) bool {
	return maxRange(wl) > 0
}

func maxRange(wl *workload.Info) int {
	m := 0
	for i := range wl.PodSets {
		m = max(m, int(wl.PodSets[i].Count-wl.PodSets[i].MinCount))
	}
	return m
}

// assigner holds the state of one assignment attempt.
type assigner struct {
	s  *cache.Snapshot
	cq *cache.ClusterQueue
	a  *Assignment
	// preempt is false when preemption is ruled out: Preempt counts as
	// NoFit.
	preempt bool
	// placed is where the podset being assigned goes in each flavor tried
	// that names a Topology; taken are the fabrics less what the
	// workload's earlier podsets take.
	placed map[berthv1alpha1.ResourceFlavorReference]*topology.Assignment
	taken  map[berthv1alpha1.ResourceFlavorReference]*topology.Fabric
}

func assign(s *cache.Snapshot, cq *cache.ClusterQueue, wl *workload.Info, sc scale, preempt bool) *Assignment {
	as := &assigner{s: s, cq: cq, preempt: preempt, a: &Assignment{
		PodSets: make([]PodSetAssignment, len(wl.PodSets)),
		Usage:   make(resources.Usage, len(wl.PodSets)*2),
		Mode:    Fit,
	}}
	for i := range wl.PodSets {
		ps := &wl.PodSets[i]
		count := sc.count(ps)
		psa := PodSetAssignment{
			Name:     ps.Name,
			Count:    count,
			Flavors:  make(map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference, len(ps.PerPod)),
			Requests: ps.PerPod.Scaled(int64(count)),
		}
		as.assignPodSet(ps, &psa)
		if psa.Topology != nil && i < len(wl.PodSets)-1 {
			as.take(&psa, ps)
		}
		as.a.PodSets[i] = psa
	}
	for fr, v := range as.a.Usage {
		if cq.Used(fr)+v > cq.Nominal(fr) {
			as.a.Borrows = true
			break
		}
	}
	return as.a
}

// assignPodSet picks a flavor per resource group the podset requests.
func (as *assigner) assignPodSet(ps *workload.PodSetInfo, psa *PodSetAssignment) {
	covered := 0
	for gi := range as.cq.ResourceGroups {
		rg := &as.cq.ResourceGroups[gi]
		requested := false
		for _, r := range rg.CoveredResources {
			if psa.Requests[r] > 0 {
				requested = true
				covered++
			}
		}
		if !requested {
			continue
		}
		clear(as.placed)
		flavor, mode := as.chooseFlavor(ps, psa, rg)
		as.a.Mode = min(as.a.Mode, mode)
		if mode == NoFit {
			continue
		}
		if a := as.placed[flavor]; a != nil && mode >= Borrow {
			psa.Topology, psa.TopologyFlavor = a, flavor
		}
		for _, r := range rg.CoveredResources {
			if v := psa.Requests[r]; v > 0 {
				psa.Flavors[r] = flavor
				fr := resources.FlavorResource{Flavor: flavor, Resource: r}
				as.a.Usage[fr] = resources.Add(as.a.Usage[fr], v)
			}
		}
	}
	if covered < countPositive(psa.Requests) {
		as.recordUncovered(ps.Name, psa.Requests)
	}
}

func countPositive(r resources.Requests) int {
	n := 0
	for _, v := range r {
		if v > 0 {
			n++
		}
	}
	return n
}

func (as *assigner) recordUncovered(podSet string, req resources.Requests) {
	for _, r := range req.Names() {
		if req[r] <= 0 || as.coveredResource(r) {
			continue
		}
		as.a.Mode = NoFit
		as.a.misses = append(as.a.misses, miss{kind: missUncovered, podSet: podSet, resource: r, need: req[r]})
	}
}

func (as *assigner) coveredResource(r corev1.ResourceName) bool {
	for _, rg := range as.cq.ResourceGroups {
		for _, c := range rg.CoveredResources {
			if c == r {
				return true
			}
		}
	}
	return false
}

// chooseFlavor walks the group's flavors in order, applying the queue's
// flavorFungibility; without a flavor that fits outright it takes the best
// seen (rank): by default borrowing before preemption, earlier flavors
// first. Stopping at a flavor that needs preemption still takes an earlier
// one that borrows: otherwise a preemptor can free quota in one flavor,
// move on to preempt in the next while its victims take the first back,
// and never run.
func (as *assigner) chooseFlavor(ps *workload.PodSetInfo, psa *PodSetAssignment, rg *cache.ResourceGroup) (berthv1alpha1.ResourceFlavorReference, Mode) {
	fung := as.cq.FlavorFungibility
	var best berthv1alpha1.ResourceFlavorReference
	bestMode, bestRank := NoFit, 0
	for _, f := range rg.Flavors {
		mode, borrows := as.flavorMode(ps, psa, rg, f)
		if r := rank(mode, borrows, fung.Preference); r > bestRank {
			best, bestMode, bestRank = f, mode, r
		}
		switch {
		case mode == Fit,
			mode == Borrow && fung.WhenCanBorrow == berthv1alpha1.MayStopSearch,
			mode == Preempt && fung.WhenCanPreempt == berthv1alpha1.MayStopSearch:
			return best, bestMode
		}
	}
	return best, bestMode
}

// rank orders a flavor's fit for chooseFlavor: outright first, none last;
// between them, by the queue's preference, borrowing before preempting,
// or preempting within the nominal quota before borrowing, before
// borrowing and preempting.
func rank(mode Mode, borrows bool, pref berthv1alpha1.FlavorFungibilityPreference) int {
	switch {
	case mode == NoFit:
		return 0
	case mode == Fit:
		return 4
	case pref != berthv1alpha1.PreemptionOverBorrowing:
		return int(mode) // Borrow 2, Preempt 1
	case mode == Preempt && !borrows:
		return 3
	case mode == Borrow:
		return 2
	default:
		return 1
	}
}

// flavorMode is how the podset's resources of the group fit in flavor f,
// given what earlier podsets of the workload already took, and whether
// they take more than the queue's nominal quota of f.
func (as *assigner) flavorMode(ps *workload.PodSetInfo, psa *PodSetAssignment, rg *cache.ResourceGroup, f berthv1alpha1.ResourceFlavorReference) (Mode, bool) {
	rf := as.s.ResourceFlavors[f]
	if rf == nil {
		as.a.misses = append(as.a.misses, miss{kind: missFlavorNotFound, podSet: ps.Name, flavor: f})
		return NoFit, false
	}
	if pin, pinned := pinnedFlavor(ps, rg); pinned && pin != f {
		// A slice of an elastic job takes its job's flavor or none; it
		// says so only when the queue no longer offers that one.
		if !slices.Contains(rg.Flavors, pin) && f == rg.Flavors[len(rg.Flavors)-1] {
			as.a.misses = append(as.a.misses, miss{kind: missPinned, podSet: ps.Name, flavor: pin})
		}
		return NoFit, false
	}
	if m, ok := checkFlavor(ps, rf); !ok {
		m.podSet, m.flavor = ps.Name, f
		as.a.misses = append(as.a.misses, m)
		return NoFit, false
	}
	mode, borrows := Fit, false
	for _, r := range rg.CoveredResources {
		need := psa.Requests[r]
		if need <= 0 {
			continue
		}
		fr := resources.FlavorResource{Flavor: f, Resource: r}
		total := resources.Add(need, as.a.Usage[fr])
		m := as.resourceMode(fr, total)
		if m == Preempt && !as.preempt {
			m = NoFit
		}
		if m < Fit {
			as.a.misses = append(as.a.misses, miss{kind: missQuota, podSet: ps.Name, flavor: f, resource: r, need: need, detail: as.cq.Detail(fr)})
		}
		mode = min(mode, m)
		borrows = borrows || m == Borrow || (m == Preempt && total > as.cq.Nominal(fr))
	}
	// Where the quota fits, the flavor's nodes must too. Preemption frees
	// quota first; the pods are placed when the head fits outright.
	if mode >= Borrow && rf.Spec.TopologyName != nil {
		req, placed := as.place(ps, psa, rf, f)
		if placed {
			return mode, borrows
		}
		// A gang that must be in one domain, which no domain has room
		// for, may free one by preempting lower-priority work there, as
		// its queue allows (see preemption.FindTargets).
		if req != nil && req.Required && as.preempt && as.a.Defrag == nil &&
			as.cq.Preemption.WithinClusterQueue != berthv1alpha1.PreemptionPolicyNever {
			as.a.Defrag = &Defrag{Flavor: f, PodSet: ps.Name, Request: *req}
			return Preempt, borrows
		}
		return NoFit, false
	}
	return mode, borrows
}

// place looks for the nodes of flavor f's fabric that take the podset as
// its pod template asks, recording the assignment or why there is none.
// The request is nil when the podset cannot be placed in the fabric at all.
func (as *assigner) place(ps *workload.PodSetInfo, psa *PodSetAssignment, rf *berthv1alpha1.ResourceFlavor, f berthv1alpha1.ResourceFlavorReference) (*topology.Request, bool) {
	fab := as.fabric(f)
	fail := func(why fmt.Stringer) (*topology.Request, bool) {
		as.a.misses = append(as.a.misses, miss{kind: missTopology, podSet: ps.Name, flavor: f, topology: why})
		return nil, false
	}
	switch {
	case fab == nil:
		return fail(text(fmt.Sprintf("its Topology %s does not exist", *rf.Spec.TopologyName)))
	case ps.TopologyError != nil:
		return fail(text(ps.TopologyError.Error()))
	}
	req := topology.Request{
		PerPod:       workload.PodWithRequests(ps.PerPod),
		Count:        psa.Count,
		Level:        -1,
		Required:     ps.Topology.Required,
		NodeSelector: ps.NodeSelector,
		NodeAffinity: ps.NodeAffinity,
		Tolerations:  append(slices.Clone(ps.Tolerations), rf.Spec.Tolerations...),
	}
	if l := ps.Topology.Level; l != "" {
		if req.Level = fab.Level(l); req.Level < 0 {
			return fail(text(fmt.Sprintf("its Topology %s has no level %s", *rf.Spec.TopologyName, l)))
		}
	}
	if l := ps.Topology.SliceLevel; l != "" {
		if req.SliceLevel = fab.Level(l); req.SliceLevel < 0 {
			return fail(text(fmt.Sprintf("its Topology %s has no level %s", *rf.Spec.TopologyName, l)))
		}
		req.SliceSize = ps.Topology.SliceSize
	}
	a, m := fab.Find(req)
	if m != nil {
		fail(m)
		return &req, false
	}
	if as.placed == nil {
		as.placed = map[berthv1alpha1.ResourceFlavorReference]*topology.Assignment{}
	}
	as.placed[f] = a
	return &req, true
}

// text is a fixed reason.
type text string

func (t text) String() string { return string(t) }

// fabric is flavor f's fabric as the workload's earlier podsets leave it.
func (as *assigner) fabric(f berthv1alpha1.ResourceFlavorReference) *topology.Fabric {
	if t := as.taken[f]; t != nil {
		return t
	}
	return as.s.Fabrics[f]
}

// take leaves the nodes of a podset's placement to the workload's later
// podsets, in a copy of the fabric.
func (as *assigner) take(psa *PodSetAssignment, ps *workload.PodSetInfo) {
	f := psa.TopologyFlavor
	if as.taken == nil {
		as.taken = map[berthv1alpha1.ResourceFlavorReference]*topology.Fabric{}
	}
	if as.taken[f] == nil {
		as.taken[f] = as.s.Fabrics[f].Clone()
	}
	as.taken[f].Take(psa.Topology, workload.PodWithRequests(ps.PerPod), nil)
}

// resourceMode is how a total need of fr fits in the queue.
func (as *assigner) resourceMode(fr resources.FlavorResource, need int64) Mode {
	cq := as.cq
	if need <= cq.Available(fr) {
		if resources.Add(cq.Used(fr), need) <= cq.Nominal(fr) {
			return Fit
		}
		return Borrow
	}
	if need > cq.Capacity(fr) {
		// Not even with every other workload of the tree gone: preempting
		// would free nothing it could use.
		return NoFit
	}
	p := cq.Preemption
	if need <= cq.Nominal(fr) && (p.WithinClusterQueue != berthv1alpha1.PreemptionPolicyNever || p.ReclaimWithinCohort != berthv1alpha1.PreemptionPolicyNever) {
		return Preempt
	}
	if p.BorrowWithinCohort.Policy != berthv1alpha1.PreemptionPolicyNever && cq.Cohort() != nil {
		return Preempt
	}
	if as.s.FairSharing && p.ReclaimWithinCohort != berthv1alpha1.PreemptionPolicyNever && cq.Cohort() != nil {
		// Fair sharing may take another queue's borrowed quota to
		// borrow, where the shares allow it.
		return Preempt
	}
	return NoFit
}

// pinnedFlavor is the one flavor the podset may take for the resources of
// group rg, and whether it is pinned to one (see workload.PodSetInfo.Flavors).
// Pinned without a flavor for a resource it requests, it may take none ("").
func pinnedFlavor(ps *workload.PodSetInfo, rg *cache.ResourceGroup) (berthv1alpha1.ResourceFlavorReference, bool) {
	if ps.Flavors == nil {
		return "", false
	}
	for _, r := range rg.CoveredResources {
		if ps.PerPod[r] > 0 {
			return ps.Flavors[r], true
		}
	}
	return "", true
}
