package preemption

import (
	"fmt"
	"math"
	"sort"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/scheduler/flavorassigner"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Target is a workload to preempt and the reason, one of the contract's
// InClusterQueue, InCohortReclamation, InCohortReclaimWhileBorrowing.
type Target struct {
	Info   *workload.Info
	Reason string
	// Why, for a fair-sharing preemption, says how the shares allowed it.
	Why string
}

// candidate is a possible victim with the reason it would carry.
type candidate struct {
	info   *workload.Info
	cq     *cache.ClusterQueue
	reason string
	why    string
}

// FindTargets returns a minimal set of workloads whose removal lets wl's
// assignment a fit in cq, or nil if none does. It first looks for a set
// after which wl fits without borrowing (reclaiming lent quota), then, if
// the queue's borrowWithinCohort allows, for one where wl borrows.
// Workloads already being evicted are always candidates, first: their
// quota is on its way back, so waiting for them preempts nothing new.
// Victims claimed by an earlier preemptor of the cycle are not candidates.
//
// Workloads admitted in the current cycle cannot be candidates either:
// evicting a workload before its admission is even written only churns.
// When one of them would be a candidate, FindTargets returns nil and late:
// the preemptor should choose in the next cycle. Choosing now, without
// it, takes others instead, often the very workload that just made room
// for the preemptor's queue by reclaiming, and the two take turns.
//
// When the assignment fits the quota but its gang no domain of the
// flavor's fabric (a.Defrag), the targets free a domain instead (see
// defragTargets).
func FindTargets(s *cache.Snapshot, cq *cache.ClusterQueue, wl *workload.Info, a *flavorassigner.Assignment) (targets []Target, late bool) {
	needed := insufficient(cq, a.Usage)
	if a.Defrag != nil {
		// The quota fits; a domain of the fabric does not.
		if len(needed) > 0 {
			return nil, false
		}
		return defragTargets(s, cq, wl, a.Defrag)
	}
	if len(needed) == 0 {
		return nil, false
	}
	for _, borrowing := range []bool{false, true} {
		if borrowing && cq.Cohort() == nil {
			break
		}
		cands, late := candidates(s, cq, wl, needed, borrowing)
		if late {
			return nil, true
		}
		if borrowing && s.FairSharing {
			if t := fairSearch(cq, a.Usage, cands, s.FairStrategies); t != nil {
				return t, false
			}
			continue
		}
		if t := search(cq, a.Usage, cands, borrowing); t != nil {
			return t, false
		}
	}
	return nil, false
}

// insufficient lists the flavor/resources where u does not fit in cq.
func insufficient(cq *cache.ClusterQueue, u resources.Usage) map[resources.FlavorResource]bool {
	out := map[resources.FlavorResource]bool{}
	for fr, v := range u {
		if v > cq.Available(fr) {
			out[fr] = true
		}
	}
	return out
}

// usesAny reports whether info uses any of frs. It looks frs up in the
// usage rather than ranging over it: frs is tiny, and map iteration is
// what dominates a preemption-heavy cycle.
func usesAny(info *workload.Info, frs map[resources.FlavorResource]bool) bool {
	for fr := range frs {
		if info.Usage[fr] > 0 {
			return true
		}
	}
	return false
}

// borrowingInAny reports whether cq is above its nominal quota in any of frs.
func borrowingInAny(cq *cache.ClusterQueue, frs map[resources.FlavorResource]bool) bool {
	for fr := range frs {
		if cq.IsBorrowingIn(fr) {
			return true
		}
	}
	return false
}

// candidates lists the allowed victims in preference order: already
// evicting first, then workloads of other queues, then lower priority,
// then the most recently admitted. late reports an allowed victim left out
// because it was admitted in the current cycle.
func candidates(s *cache.Snapshot, cq *cache.ClusterQueue, wl *workload.Info, needed map[resources.FlavorResource]bool, borrowing bool) (out []candidate, late bool) {
	add := func(info *workload.Info, in *cache.ClusterQueue, reason string, allowed bool) {
		if !usesAny(info, needed) || s.Claimed(info.Key) || (!info.Evicting && !allowed) {
			return
		}
		if s.AddedInCycle(info.Key) {
			late = true
			return
		}
		out = append(out, candidate{info: info, cq: in, reason: reason})
	}
	for _, info := range cq.Workloads() {
		// Within its own queue a preemptor makes room only up to the
		// nominal quota: preempting there so as to borrow would let the
		// victim's place be taken by the cohort, and the quota the
		// preemptor borrows be reclaimed, in turns without end.
		add(info, cq, berthv1alpha1.ReasonInClusterQueue, !borrowing && allowedWithin(cq.Preemption.WithinClusterQueue, wl, info))
	}
	if root := cq.Root(); root != nil {
		reason := berthv1alpha1.ReasonInCohortReclamation
		if borrowing {
			reason = berthv1alpha1.ReasonInCohortReclaimWhileBorrowing
		}
		for _, other := range root.AllClusterQueues() {
			// Only a queue above its nominal quota gives anything back. Its
			// workloads being evicted keep it there until they are gone, so
			// waiting for them is not lost by skipping the others.
			if other == cq || !borrowingInAny(other, needed) {
				continue
			}
			for _, info := range other.Workloads() {
				// With fair sharing, the shares decide whether a borrower
				// may take what another borrows (see fairSearch), within
				// what reclaimWithinCohort allows.
				add(info, other, reason, allowedInCohort(cq.Preemption, borrowing && !s.FairSharing, wl, info))
			}
		}
	}
	var shares map[*cache.ClusterQueue]int64
	if borrowing && s.FairSharing {
		shares = map[*cache.ClusterQueue]int64{}
		for _, c := range out {
			shares[c.cq] = c.cq.WeightedShare()
		}
	}
	sort.Slice(out, func(i, j int) bool { return before(out[i], out[j], cq, shares) })
	return out, late
}

// before orders candidates: evicting first, then other queues', with fair
// sharing those of the queue with the highest share first, then lower
// priority, then the most recently admitted.
func before(a, b candidate, cq *cache.ClusterQueue, shares map[*cache.ClusterQueue]int64) bool {
	if a.info.Evicting != b.info.Evicting {
		return a.info.Evicting
	}
	if (a.cq != cq) != (b.cq != cq) {
		return a.cq != cq
	}
	if sa, sb := shares[a.cq], shares[b.cq]; sa != sb {
		return sa > sb
	}
	if a.info.Priority != b.info.Priority {
		return a.info.Priority < b.info.Priority
	}
	if !a.info.ReservedAt.Equal(b.info.ReservedAt) {
		return a.info.ReservedAt.After(b.info.ReservedAt)
	}
	return a.info.Key < b.info.Key
}

// allowedWithin applies withinClusterQueue. Equal priority needs a later
// queue time, and an evicted workload re-enters at its eviction time, so
// two workloads can never preempt each other in turn.
func allowedWithin(p berthv1alpha1.PreemptionPolicy, wl, victim *workload.Info) bool {
	switch p {
	case berthv1alpha1.PreemptionPolicyLowerPriority:
		return victim.Priority < wl.Priority
	case berthv1alpha1.PreemptionPolicyLowerOrNewerEqualPriority:
		return victim.Priority < wl.Priority || (victim.Priority == wl.Priority && wl.QueueTime.Before(victim.QueueTime))
	}
	return false
}

// allowedInCohort applies reclaimWithinCohort, or borrowWithinCohort when
// the preemptor would borrow. The victim's queue must also be borrowing,
// which search checks as victims are removed.
func allowedInCohort(p berthv1alpha1.ClusterQueuePreemption, borrowing bool, wl, victim *workload.Info) bool {
	if borrowing {
		b := p.BorrowWithinCohort
		return b.Policy == berthv1alpha1.PreemptionPolicyLowerPriority && victim.Priority < wl.Priority &&
			(b.MaxPriorityThreshold == nil || victim.Priority <= *b.MaxPriorityThreshold)
	}
	switch p.ReclaimWithinCohort {
	case berthv1alpha1.PreemptionPolicyAny:
		return true
	case berthv1alpha1.PreemptionPolicyLowerPriority:
		return victim.Priority < wl.Priority
	}
	return false
}

// search finds a minimal set of candidates whose removal lets u fit in
// cq. It first reclaims only surplus: workloads of other queues that lie
// wholly above their queue's nominal quota. Taking more from a queue than
// it borrows leaves it below its nominal quota with its own work waiting,
// and that work reclaims in turn from a third queue: one reclaim sets off
// a chain. Only when surplus is not enough, and wl would not borrow, is
// any borrowing queue's workload taken: a borrower that left another
// queue below its nominal quota would be preempted back by the queue's
// own work, which may reclaim from borrowers at any priority, and the
// two would take turns without either finishing.
func search(cq *cache.ClusterQueue, u resources.Usage, cands []candidate, borrowing bool) []Target {
	if t := searchOnce(cq, u, cands, borrowing, true, nil); t != nil || borrowing {
		return t
	}
	return searchOnce(cq, u, cands, borrowing, false, nil)
}

// fairSearch finds victims for a preemptor that would borrow, under fair
// sharing: in other queues' surplus only, as search, and only where the
// shares allow, by the first of the strategies that finds enough:
//
//   - the preemptor's queue, with it admitted, would have a share at most
//     the victim's queue's once the victim is gone
//     (LessThanOrEqualToFinalShare);
//   - or below the victim's queue's share now (LessThanInitialShare).
//
// Shares are compared where the two queues' paths part: between sibling
// cohorts in a hierarchy. The victim's queue's share is taken with the
// victims chosen before it gone. A preempted workload cannot take its
// place back: its queue's share with it would be above the preemptor's
// without what it took. A queue of weight 0 has an endless share when it
// borrows, so it never preempts to borrow.
func fairSearch(cq *cache.ClusterQueue, u resources.Usage, cands []candidate, strategies []configv1alpha1.PreemptionStrategy) []Target {
	preemptor := cq.SharesWith(u)
	if len(preemptor) == 0 || math.IsInf(preemptor[len(preemptor)-1].Share, 1) {
		return nil
	}
	for _, name := range strategies {
		allows := func(c candidate) (string, bool) {
			before := c.cq.SharesWith(nil)
			after := c.cq.SharesWith(negated(c.info.Usage))
			i, ok := cache.Parting(preemptor, before)
			if !ok {
				return "", false
			}
			p, them := preemptor[i], before[i]
			if name == configv1alpha1.LessThanInitialShare {
				return fmt.Sprintf("to share fairly: %s's share with the preemptor, %s, is below %s's, %s (%s)",
					p.Name(), cache.FormatShare(p.Share), them.Name(), cache.FormatShare(them.Share), name), p.Share < them.Share
			}
			them = after[i]
			return fmt.Sprintf("to share fairly: %s's share with the preemptor, %s, is at most %s's without this workload, %s (%s)",
				p.Name(), cache.FormatShare(p.Share), them.Name(), cache.FormatShare(them.Share), name), p.Share <= them.Share
		}
		if t := searchOnce(cq, u, cands, true, true, allows); t != nil {
			return t
		}
	}
	return nil
}

func negated(u resources.Usage) resources.Usage {
	out := make(resources.Usage, len(u))
	for fr, v := range u {
		out[fr] = -v
	}
	return out
}

// searchOnce removes candidates greedily until u fits, then puts back, in
// reverse order, each one that is not needed. It restores the snapshot.
// allows, when set, must allow a candidate of another queue that is not
// being evicted, as the snapshot is when its turn comes, and says why.
func searchOnce(cq *cache.ClusterQueue, u resources.Usage, cands []candidate, borrowing, surplusOnly bool, allows func(candidate) (why string, ok bool)) []Target {
	fits := func() bool {
		return cq.Fits(u) && (borrowing || !borrows(cq, u))
	}
	var chosen []candidate
	defer func() {
		for _, c := range chosen {
			c.cq.AddUsage(c.info.Usage)
		}
	}()
	done := false
	for _, c := range cands {
		if c.cq != cq && !c.info.Evicting && !borrowingIn(c.cq, c.info.Usage) {
			// Lent quota is reclaimed only from queues above their
			// nominal quota: a queue within it keeps what it owns.
			continue
		}
		if surplusOnly && c.cq != cq && !c.info.Evicting && !surplus(c.cq, c.info.Usage) {
			continue
		}
		if allows != nil && c.cq != cq && !c.info.Evicting {
			why, ok := allows(c)
			if !ok {
				continue
			}
			c.why = why
		}
		c.cq.RemoveUsage(c.info.Usage)
		chosen = append(chosen, c)
		if done = fits(); done {
			break
		}
	}
	if !done {
		return nil
	}
	for i := len(chosen) - 1; i >= 0; i-- {
		c := chosen[i]
		c.cq.AddUsage(c.info.Usage)
		if fits() {
			chosen = append(chosen[:i], chosen[i+1:]...)
			continue
		}
		c.cq.RemoveUsage(c.info.Usage)
	}
	targets := make([]Target, len(chosen))
	for i, c := range chosen {
		targets[i] = Target{Info: c.info, Reason: c.reason, Why: c.why}
	}
	return targets
}

func borrows(cq *cache.ClusterQueue, u resources.Usage) bool {
	for fr, v := range u {
		if cq.Used(fr)+v > cq.Nominal(fr) {
			return true
		}
	}
	return false
}

func borrowingIn(cq *cache.ClusterQueue, u resources.Usage) bool {
	for fr, v := range u {
		if v > 0 && cq.IsBorrowingIn(fr) {
			return true
		}
	}
	return false
}

// surplus reports whether removing u leaves cq at or above its nominal
// quota wherever u borrows: u is wholly borrowed quota.
func surplus(cq *cache.ClusterQueue, u resources.Usage) bool {
	for fr, v := range u {
		if v > 0 && cq.IsBorrowingIn(fr) && cq.Used(fr)-v < cq.Nominal(fr) {
			return false
		}
	}
	return true
}
