package scheduler

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
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

// TestFairPreemptionsMoveTowardFair runs random scenarios with fair
// sharing on and no lending or borrowing limits, where checkFairPreemptions
// recounts the shares of every preemption by the shares on its own.
func TestFairPreemptionsMoveTowardFair(t *testing.T) {
	scenarios := 2000
	if testing.Short() {
		scenarios = 200
	}
	checked := 0
	for seed := int64(1); seed <= int64(scenarios); seed++ {
		n, err := runSharesScenario(seed, 20)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checked += n
	}
	if checked == 0 {
		t.Fatal("no preemption by the shares was checked")
	}
	t.Logf("%d preemptions by the shares checked", checked)
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
	_, err := runScenarioOf(newSim(seed, parallelism, false), steps)
	return err
}

// runSharesScenario runs the shares scenario of seed (see newSim) and
// returns how many preemptions by the shares it checked.
func runSharesScenario(seed int64, steps int) (int, error) {
	return runScenarioOf(newSim(seed, 4, true), steps)
}

func runScenarioOf(s *sim, steps int) (int, error) {
	ctx := context.Background()
	checked := 0
	for step := 0; step < steps; step++ {
		s.now = s.now.Add(time.Minute)
		s.addWorkloads(s.rng.Intn(6))
		strict := s.strictOrders()
		s.admitted, s.preempted = map[string]*berthv1alpha1.Admission{}, nil
		clear(s.failed)
		reserved := s.reservations(nil)
		// As Start does when a preemption delay ends.
		s.sched.WakeHeld()
		s.sched.Schedule(ctx)
		if err := s.checkCycle(strict); err != nil {
			return checked, fmt.Errorf("step %d: %w", step, err)
		}
		n, err := s.checkFairPreemptions(s.reservations(reserved))
		if err != nil {
			return checked, fmt.Errorf("step %d: %w", step, err)
		}
		checked += n
		s.applyDecisions()
		if err := s.checkQuota(); err != nil {
			return checked, fmt.Errorf("step %d: %w", step, err)
		}
		s.settle(4)
	}
	return checked, s.checkLiveness(ctx)
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
		s.sched.WakeHeld()
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

// checkFairPreemptions checks, with shares computed here from the
// workloads rather than by the cache, that every preemption by the shares
// took from a side of the cohort tree whose share was above the
// preemptor's side: where the two queues' paths part, the preemptor's
// node, at its lowest in the cycle (every victim of the cycle released),
// is below the victim's node at its highest (every admission of the cycle
// added, written or not, since a failed write keeps its quota taken for
// the rest of the cycle, and every reservation of a waiting preemptor,
// which counts as used: see nomination). A preemption that went the other way would move the shares away
// from fair. Topologies with lending or borrowing limits are left out: the
// shares here count quota without them.
//
// It returns how many preemptions it checked.
func (s *sim) checkFairPreemptions(reserved map[string]*berthv1alpha1.Admission) (int, error) {
	var fair []preemptionEvent
	for _, p := range s.preempted {
		if p.fair {
			fair = append(fair, p)
		}
	}
	if len(fair) == 0 {
		return 0, nil
	}
	victims := map[string]bool{}
	for _, p := range s.preempted {
		victims[p.victim] = true
	}
	low, ok := s.independentShares(func(key string) bool { return !victims[key] }, nil)
	if !ok {
		return 0, nil
	}
	extra := maps.Clone(reserved)
	maps.Copy(extra, s.admitted)
	for key, adm := range s.failed {
		extra["failed/"+key] = adm
	}
	high, _ := s.independentShares(func(string) bool { return true }, extra)
	for _, p := range fair {
		a, b, ok := s.parting(s.cqOf[p.preemptor], s.cqOf[p.victim])
		if !ok {
			return 0, fmt.Errorf("%s preempted %s by the shares across cohort trees", p.preemptor, p.victim)
		}
		if !(low[a] < high[b]) {
			return 0, fmt.Errorf("%s preempted %s by the shares, but %s's share, %v at least, is not below %s's, %v at most", p.preemptor, p.victim, a, low[a], b, high[b])
		}
	}
	return len(fair), nil
}

// reservations adds to into the reservations of the scheduler's waiting
// preemptors, as admissions of all they want, keyed by "reserved/" and the
// preemptor's key.
func (s *sim) reservations(into map[string]*berthv1alpha1.Admission) map[string]*berthv1alpha1.Admission {
	if into == nil {
		into = map[string]*berthv1alpha1.Admission{}
	}
	for key, n := range s.sched.nominated {
		adm := &berthv1alpha1.Admission{ClusterQueue: n.clusterQueue}
		for fr, v := range n.want {
			adm.PodSetAssignments = append(adm.PodSetAssignments, berthv1alpha1.PodSetAssignment{
				Name:          fr.Resource.String(),
				Flavors:       map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{fr.Resource: fr.Flavor},
				ResourceUsage: corev1.ResourceList{fr.Resource: resources.Quantity(fr.Resource, v)},
			})
		}
		into["reserved/"+key] = adm
	}
	return into
}

// nodeParent is the parent of a node of the cohort trees: "cq:NAME" or
// "cohort:NAME"; "" for a root.
func (s *sim) nodeParent(node string) string {
	kind, name, _ := strings.Cut(node, ":")
	if kind == "cq" {
		if c := s.cqs[berthv1alpha1.ClusterQueueReference(name)].Spec.CohortName; c != "" {
			return "cohort:" + string(c)
		}
		return ""
	}
	for _, c := range s.cohorts {
		if c.Name == name && c.Spec.ParentName != "" {
			return "cohort:" + string(c.Spec.ParentName)
		}
	}
	return ""
}

// parting is the two nodes under the lowest common cohort of x's and y's
// paths, on x's side and on y's.
func (s *sim) parting(x, y berthv1alpha1.ClusterQueueReference) (a, b string, ok bool) {
	path := func(cq berthv1alpha1.ClusterQueueReference) []string {
		var out []string
		for n := "cq:" + string(cq); n != ""; n = s.nodeParent(n) {
			out = append([]string{n}, out...)
		}
		return out
	}
	px, py := path(x), path(y)
	for i := 0; i < len(px) && i < len(py); i++ {
		if px[i] != py[i] {
			return px[i], py[i], i > 0
		}
	}
	return "", "", false
}

// independentShares is the weighted share of every node, per mille, from
// the workloads holding quota that keep selects, and extra admissions; ok
// is false for a topology with lending or borrowing limits.
func (s *sim) independentShares(keep func(string) bool, extra map[string]*berthv1alpha1.Admission) (map[string]float64, bool) {
	type fr struct{ node, flavor string }
	quota, usage := map[fr]int64{}, map[fr]int64{}
	weight := map[string]float64{}
	addUp := func(m map[fr]int64, node, flavor string, v int64) {
		for n := node; n != ""; n = s.nodeParent(n) {
			m[fr{n, flavor}] += v
		}
	}
	for name, cq := range s.cqs {
		node := "cq:" + string(name)
		weight[node] = 1
		if fs := cq.Spec.FairSharing; fs != nil && fs.Weight != nil {
			weight[node] = fs.Weight.AsApproximateFloat64()
		}
		for _, g := range cq.Spec.ResourceGroups {
			for _, f := range g.Flavors {
				r := f.Resources[0]
				if r.BorrowingLimit != nil || r.LendingLimit != nil {
					return nil, false
				}
				addUp(quota, node, string(f.Name), quantity(r.NominalQuota))
			}
		}
	}
	for _, c := range s.cohorts {
		for _, g := range c.Spec.ResourceGroups {
			for _, f := range g.Flavors {
				addUp(quota, "cohort:"+c.Name, string(f.Name), quantity(f.Resources[0].NominalQuota))
			}
		}
	}
	use := func(cq berthv1alpha1.ClusterQueueReference, adm *berthv1alpha1.Admission) {
		for k, v := range workload.AdmissionUsage(adm) {
			addUp(usage, "cq:"+string(cq), string(k.Flavor), v)
		}
	}
	for key, w := range s.objs {
		if workload.HasQuotaReservation(w) && keep(key) {
			use(s.cqOf[key], w.Status.Admission)
		}
	}
	for _, adm := range extra {
		use(adm.ClusterQueue, adm)
	}
	root := func(n string) string {
		for p := s.nodeParent(n); p != ""; p = s.nodeParent(n) {
			n = p
		}
		return n
	}
	shares := map[string]float64{}
	for k := range quota {
		if _, done := shares[k.node]; done || s.nodeParent(k.node) == "" {
			continue
		}
		var borrowed, lendable int64
		for _, f := range s.flavors {
			borrowed += max(0, usage[fr{k.node, f}]-quota[fr{k.node, f}])
			lendable += quota[fr{root(k.node), f}]
		}
		w, ok := weight[k.node]
		if !ok {
			w = 1
		}
		switch {
		case borrowed == 0:
			shares[k.node] = 0
		case w == 0 || lendable == 0:
			shares[k.node] = math.Inf(1)
		default:
			shares[k.node] = float64(borrowed) / float64(lendable) * 1000 / w
		}
	}
	return shares, true
}
