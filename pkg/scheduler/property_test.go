package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workload"
)

// TestRandomizedInvariants runs thousands of seeded random scenarios and
// checks the admission invariants after every cycle. Odd seeds write a
// round's admissions in parallel.
func TestRandomizedInvariants(t *testing.T) {
	scenarios := 3000
	if testing.Short() {
		scenarios = 300
	}
	for seed := int64(1); seed <= int64(scenarios); seed++ {
		if err := runScenario(seed, 12, 1+3*int(seed%2)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// FuzzSchedule runs a random scenario per input; the seed corpus runs in
// every go test.
func FuzzSchedule(f *testing.F) {
	for _, seed := range []int64{0, 7, 42, 1234, 99991} {
		f.Add(seed, uint8(10))
	}
	// Scenarios that once found a preemption cycle or a workload left
	// waiting beside free quota.
	f.Add(int64(4516), uint8(23))
	f.Add(int64(9126), uint8(15))
	f.Add(int64(16493), uint8(23))
	f.Add(int64(21212), uint8(31))
	f.Add(int64(40650), uint8(19))
	f.Add(int64(56098), uint8(11))
	f.Add(int64(679), uint8(19))
	f.Add(int64(15816), uint8(27))
	f.Fuzz(func(t *testing.T, seed int64, steps uint8) {
		if err := runScenario(seed, int(steps%32)+1, 4); err != nil {
			t.Fatal(err)
		}
	})
}

func runScenario(seed int64, steps, parallelism int) error {
	s := newSim(seed, parallelism)
	ctx := context.Background()
	for step := 0; step < steps; step++ {
		s.now = s.now.Add(time.Minute)
		s.addWorkloads(s.rng.Intn(6))
		strict := s.strictOrders()
		s.admitted, s.preempted = map[string]*berthv1alpha1.Admission{}, nil
		s.sched.Schedule(ctx)
		if err := s.checkCycle(strict); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		s.applyDecisions()
		if err := s.checkQuota(); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		s.settle(4)
	}
	return s.checkLiveness(ctx)
}

// checkLiveness stops arrivals and finishes, lets the scheduler run until
// it decides nothing for three cycles in a row (at most 40 cycles), and
// then checks that no workload waits that fits in its ClusterQueue's own
// unused nominal quota, and in its cohort tree, without preempting
// anything: such a workload must have been admitted. In a StrictFIFO
// queue only the head is checked.
func (s *sim) checkLiveness(ctx context.Context) error {
	quiet := 0
	for cycle := 0; quiet < 3; cycle++ {
		if cycle == 40 {
			return fmt.Errorf("the scheduler still decides after 40 cycles without arrivals or finishes: admitted %v, preempted %+v", sortedKeys(s.admitted), s.preempted)
		}
		s.now = s.now.Add(time.Minute)
		s.admitted, s.preempted = map[string]*berthv1alpha1.Admission{}, nil
		s.sched.Schedule(ctx)
		if len(s.admitted)+len(s.preempted) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		s.applyDecisions()
		s.settle(1 << 30)
	}
	for _, key := range sortedKeys(s.objs) {
		w := s.objs[key]
		if workload.HasQuotaReservation(w) {
			continue
		}
		cq := s.cqs[s.cqOf[key]]
		if cq.Spec.QueueingStrategy == berthv1alpha1.StrictFIFO {
			if order := s.queues.Order(berthv1alpha1.ClusterQueueReference(cq.Name)); len(order) == 0 || order[0] != key {
				continue
			}
		}
		ps := w.Spec.PodSets[0]
		need := int64(ptr.Deref(ps.MinCount, ps.Count)) * quantity(ps.Template.Spec.Containers[0].Resources.Requests["gpu"])
		for _, f := range cq.Spec.ResourceGroups[0].Flavors {
			if free := s.freeWithoutPreemption(cq, f); need <= free {
				return fmt.Errorf("%s waits for %d gpu of flavor %s although %s has %d free without preempting; the scheduler says: %s; queue %+v",
					key, need, f.Name, cq.Name, free, s.pendingMsg[key], cq.Spec)
			}
		}
	}
	return nil
}

// freeWithoutPreemption is how much of flavor f's quota cq may take now
// within its nominal quota: its own unused nominal, and no more than its
// cohort tree has unused (the other queues' guaranteed quota counted as
// used), recomputed from the admissions.
func (s *sim) freeWithoutPreemption(cq *berthv1alpha1.ClusterQueue, f berthv1alpha1.FlavorQuotas) int64 {
	used := func(name berthv1alpha1.ClusterQueueReference) int64 {
		var u int64
		for k, w := range s.objs {
			if adm := w.Status.Admission; adm != nil && workload.HasQuotaReservation(w) && s.cqOf[k] == name {
				for _, psa := range adm.PodSetAssignments {
					if psa.Flavors["gpu"] == f.Name {
						u += quantity(psa.ResourceUsage["gpu"])
					}
				}
			}
		}
		return u
	}
	own := quantity(f.Resources[0].NominalQuota) - used(berthv1alpha1.ClusterQueueReference(cq.Name))
	tree := s.treeOf(cq)
	if tree == "" {
		return own
	}
	total, taken := int64(0), used(berthv1alpha1.ClusterQueueReference(cq.Name))
	for name, other := range s.cqs {
		if s.treeOf(other) != tree {
			continue
		}
		for _, of := range other.Spec.ResourceGroups[0].Flavors {
			if of.Name != f.Name {
				continue
			}
			r := of.Resources[0]
			total += quantity(r.NominalQuota)
			if name == berthv1alpha1.ClusterQueueReference(cq.Name) {
				continue
			}
			guaranteed := int64(0)
			if r.LendingLimit != nil {
				guaranteed = quantity(r.NominalQuota) - quantity(*r.LendingLimit)
			}
			taken += max(used(name), guaranteed)
		}
	}
	if tree == "root" {
		for _, c := range s.cohorts {
			for _, g := range c.Spec.ResourceGroups {
				for _, cf := range g.Flavors {
					if cf.Name == f.Name {
						total += quantity(cf.Resources[0].NominalQuota)
					}
				}
			}
		}
	}
	return min(own, total-taken)
}

// strictOrders snapshots the order of every StrictFIFO queue.
func (s *sim) strictOrders() map[berthv1alpha1.ClusterQueueReference][]string {
	out := map[berthv1alpha1.ClusterQueueReference][]string{}
	for name, cq := range s.cqs {
		if cq.Spec.QueueingStrategy == berthv1alpha1.StrictFIFO {
			out[name] = s.queues.Order(name)
		}
	}
	return out
}

// checkCycle checks a cycle's decisions: StrictFIFO admits a prefix of its
// order, victims are allowed by policy, and no two workloads preempt each
// other in turn while no quota is freed.
func (s *sim) checkCycle(strict map[berthv1alpha1.ClusterQueueReference][]string) error {
	for name, order := range strict {
		prefix := true
		for _, key := range order {
			_, ok := s.admitted[key]
			if ok && !prefix {
				return fmt.Errorf("StrictFIFO %s admitted %s behind a pending workload; order %v", name, key, order)
			}
			prefix = prefix && ok
		}
	}
	for _, p := range s.preempted {
		if err := s.checkVictim(p); err != nil {
			return err
		}
		// The reverse preemption is thrashing unless quota was freed in
		// between: a finished workload can put a queue back under its
		// nominal quota, and reclaiming it is then its right.
		if f, ok := s.pairs[p.victim+">"+p.preemptor]; ok && f == s.finished {
			return fmt.Errorf("%s and %s preempted each other with no workload finished in between", p.preemptor, p.victim)
		}
		s.pairs[p.preemptor+">"+p.victim] = s.finished
	}
	return nil
}

func (s *sim) checkVictim(p preemptionEvent) error {
	pre, vic := s.objs[p.preemptor], s.objs[p.victim]
	if vic == nil || !workload.HasQuotaReservation(vic) || workload.IsEvicted(vic) {
		return fmt.Errorf("victim %s holds no quota or is already evicted", p.victim)
	}
	pol := s.cqs[s.cqOf[p.preemptor]].Spec.Preemption
	pp, vp := workload.Priority(pre), workload.Priority(vic)
	sameCQ := vic.Status.Admission.ClusterQueue == s.cqOf[p.preemptor]
	var ok bool
	switch p.reason {
	case berthv1alpha1.ReasonInClusterQueue:
		ok = sameCQ && (vp < pp && pol.WithinClusterQueue != "Never" ||
			vp == pp && pol.WithinClusterQueue == berthv1alpha1.PreemptionPolicyLowerOrNewerEqualPriority && workload.QueueTime(pre).Before(workload.QueueTime(vic)))
	case berthv1alpha1.ReasonInCohortReclamation:
		ok = !sameCQ && (pol.ReclaimWithinCohort == berthv1alpha1.PreemptionPolicyAny || pol.ReclaimWithinCohort == berthv1alpha1.PreemptionPolicyLowerPriority && vp < pp)
	case berthv1alpha1.ReasonInCohortReclaimWhileBorrowing:
		if s.sched.fairSharing {
			// The shares decide, within what reclaimWithinCohort allows.
			ok = !sameCQ && (pol.ReclaimWithinCohort == berthv1alpha1.PreemptionPolicyAny || pol.ReclaimWithinCohort == berthv1alpha1.PreemptionPolicyLowerPriority && vp < pp)
			break
		}
		th := pol.BorrowWithinCohort.MaxPriorityThreshold
		ok = !sameCQ && pol.BorrowWithinCohort.Policy == berthv1alpha1.PreemptionPolicyLowerPriority && vp < pp && (th == nil || vp <= *th)
	}
	if !ok {
		return fmt.Errorf("%s preempted %s (priorities %d, %d) with reason %s against policy %+v", p.preemptor, p.victim, pp, vp, p.reason, pol)
	}
	return nil
}

// checkQuota recomputes usage from the objects, independently of the
// cache, and checks every limit: per queue nominal + borrowingLimit, per
// cohort tree its total, with lending limits keeping each queue's
// non-lendable quota out of the others' reach. The scenarios put limits
// only on queues, so per tree: sum over queues of max(usage,
// nominal - lendingLimit) <= total nominal of the tree.
func (s *sim) checkQuota() error {
	type key struct {
		cq string
		fr string
	}
	usage := map[key]int64{}
	for k, w := range s.objs {
		adm := w.Status.Admission
		if adm == nil || !workload.HasQuotaReservation(w) {
			continue
		}
		if adm.ClusterQueue != s.cqOf[k] {
			return fmt.Errorf("%s admitted in %s, queued in %s", k, adm.ClusterQueue, s.cqOf[k])
		}
		for _, psa := range adm.PodSetAssignments {
			for r, q := range psa.ResourceUsage {
				usage[key{string(adm.ClusterQueue), string(psa.Flavors[r]) + "/" + string(r)}] += quantity(q)
			}
		}
	}
	treeUse, treeTotal := map[string]int64{}, map[string]int64{}
	for name, cq := range s.cqs {
		tree := s.treeOf(cq)
		for _, f := range cq.Spec.ResourceGroups[0].Flavors {
			r := f.Resources[0]
			fr := string(f.Name) + "/" + string(r.Name)
			u, nominal := usage[key{string(name), fr}], quantity(r.NominalQuota)
			delete(usage, key{string(name), fr})
			if r.BorrowingLimit != nil && u > nominal+quantity(*r.BorrowingLimit) {
				return fmt.Errorf("%s uses %d of %s, above nominal %d + borrowingLimit %d", name, u, fr, nominal, quantity(*r.BorrowingLimit))
			}
			guaranteed := int64(0)
			if tree == "" {
				guaranteed = nominal
			} else if r.LendingLimit != nil {
				guaranteed = nominal - quantity(*r.LendingLimit)
			}
			treeUse[tree+"/"+string(name)+fr] = max(u, guaranteed)
			treeUse[tree+"|"+fr] += max(u, guaranteed)
			treeTotal[tree+"|"+fr] += nominal
		}
	}
	for k, v := range usage {
		if v > 0 {
			return fmt.Errorf("%s uses %d of %s, which it has no quota for", k.cq, v, k.fr)
		}
	}
	for _, c := range s.cohorts {
		for _, f := range c.Spec.ResourceGroups {
			for _, fq := range f.Flavors {
				treeTotal["root|"+string(fq.Name)+"/"+string(fq.Resources[0].Name)] += quantity(fq.Resources[0].NominalQuota)
			}
		}
	}
	for k, total := range treeTotal {
		if treeUse[k] > total {
			return fmt.Errorf("cohort tree %s uses %d (lending limits included), above its total %d", k, treeUse[k], total)
		}
	}
	return nil
}

// treeOf names the root of a queue's cohort tree; "" without a cohort.
func (s *sim) treeOf(cq *berthv1alpha1.ClusterQueue) string {
	switch c := string(cq.Spec.CohortName); {
	case c == "inner" && len(s.cohorts) > 0, c == "root":
		return "root"
	case c == "":
		return ""
	default:
		return c
	}
}
