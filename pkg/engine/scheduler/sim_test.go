package scheduler

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// sim plays the controllers around a scheduler: it applies decisions to
// the objects, feeds the cache and queues, finishes workloads and requeues
// preempted ones, so that many cycles can run against random scenarios.
type sim struct {
	seed int64
	rng  *rand.Rand
	// fair draws the fair-sharing settings.
	fair    *rand.Rand
	mu      sync.Mutex
	cache   *cache.Cache
	queues  *queue.Manager
	sched   *Scheduler
	now     time.Time
	cqs     map[berthv1alpha1.ClusterQueueReference]*berthv1alpha1.ClusterQueue
	cohorts []*berthv1alpha1.Cohort
	// objs holds every live workload by key; cqOf its ClusterQueue.
	objs map[string]*berthv1alpha1.Workload
	cqOf map[string]berthv1alpha1.ClusterQueueReference
	// Decisions of the current cycle; failed are the admissions whose
	// write failed.
	admitted  map[string]*berthv1alpha1.Admission
	failed    map[string]*berthv1alpha1.Admission
	preempted []preemptionEvent
	// pairs records, per "preemptor>victim", how many workloads had
	// finished when the preemption happened.
	pairs map[string]int
	// finished counts the workloads finished so far.
	finished int
	nextID   int
	flavors  []string
	// pendingMsg is the last reason to wait the scheduler gave each
	// workload.
	pendingMsg map[string]string
	// noLimits drops the lending and borrowing limits of the topology.
	noLimits bool
}

type preemptionEvent struct {
	victim, preemptor, reason string
	// fair is set for a preemption by the shares.
	fair bool
}

var _ Applier = (*sim)(nil)

// Admit fails one write in twenty, chosen by a hash of the workload and
// the time rather than by the random source, so that a scenario is the
// same whatever order parallel writes come in.
func (s *sim) Admit(_ context.Context, wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(workload.Key(wl) + s.now.String() + strconv.FormatInt(s.seed, 10)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.Sum32()%20 == 0 {
		s.failed[workload.Key(wl)] = adm
		return nil, fmt.Errorf("injected write failure")
	}
	s.admitted[workload.Key(wl)] = adm
	return nil, nil
}

func (s *sim) Preempt(_ context.Context, wl *berthv1alpha1.Workload, reason, msg string) error {
	var preemptor string
	var prio int
	if _, err := fmt.Sscanf(msg, "Preempted to accommodate workload %s (priority %d)", &preemptor, &prio); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.preempted = append(s.preempted, preemptionEvent{victim: workload.Key(wl), preemptor: preemptor, reason: reason, fair: strings.Contains(msg, "to share fairly")})
	return nil
}

func (s *sim) SetPending(wl *berthv1alpha1.Workload, _, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pendingMsg[workload.Key(wl)] = msg
}

// newSim builds a random scenario; parallelism is the scheduler's. A
// shares scenario has fair sharing on and no lending or borrowing limits
// (drawn all the same, so that it is the seed's scenario without them), so
// that checkFairPreemptions can count the shares on its own.
func newSim(seed int64, parallelism int, shares bool) *sim {
	s := emptySim(seed, parallelism)
	s.noLimits = shares
	// Fair sharing and weights come from a generator of their own, so that
	// a seed's scenario is the one it was before they existed.
	s.fair = rand.New(rand.NewSource(seed ^ 0x5eed))
	if s.fair.Intn(2) == 0 || shares {
		final, initial := configv1alpha1.LessThanOrEqualToFinalShare, configv1alpha1.LessThanInitialShare
		WithFairSharing([][]configv1alpha1.PreemptionStrategy{{final, initial}, {final}, {initial}}[s.fair.Intn(3)]...)(s.sched)
	}
	// So does the preemption delay: a third of the scenarios hold freed
	// quota for a step and a half before evicting.
	if rand.New(rand.NewSource(seed^0xde1a)).Intn(3) == 0 {
		WithPreemptionDelay(90 * time.Second)(s.sched)
	}
	s.randomTopology()
	return s
}

// emptySim is a sim with its flavors and no queue.
func emptySim(seed int64, parallelism int) *sim {
	rng := rand.New(rand.NewSource(seed))
	s := &sim{
		seed: seed, rng: rng, cache: cache.New(), queues: queue.NewManager(), now: utiltesting.BaseTime,
		cqs:  map[berthv1alpha1.ClusterQueueReference]*berthv1alpha1.ClusterQueue{},
		objs: map[string]*berthv1alpha1.Workload{}, cqOf: map[string]berthv1alpha1.ClusterQueueReference{},
		pairs: map[string]int{}, flavors: []string{"f0", "f1"}, pendingMsg: map[string]string{},
		failed: map[string]*berthv1alpha1.Admission{},
	}
	s.sched = New(s.cache, s.queues, s, WithClock(func() time.Time { return s.now }), WithParallelism(parallelism))
	for _, f := range s.flavors {
		s.cache.AddOrUpdateResourceFlavor(utiltesting.MakeResourceFlavor(f))
	}
	return s
}

// randomTopology builds 2 to 5 queues in up to two cohort trees, some
// nested, with random quotas, limits and policies.
func (s *sim) randomTopology() {
	r := s.rng
	if r.Intn(2) == 0 {
		c := utiltesting.MakeCohort("inner").Parent("root")
		if r.Intn(2) == 0 {
			c.ResourceGroup(utiltesting.MakeFlavorQuotas("f0").Resource("gpu", fmt.Sprint(r.Intn(4))).Obj(), utiltesting.MakeFlavorQuotas("f1").Resource("gpu", "0").Obj())
		}
		s.cohorts = append(s.cohorts, c.Obj())
	}
	for _, c := range s.cohorts {
		s.cache.AddOrUpdateCohort(c)
		s.queues.AddOrUpdateCohort(c)
	}
	for i, n := 0, 2+r.Intn(4); i < n; i++ {
		cohort := []string{"root", "inner", "", "other"}[r.Intn(4)]
		w := utiltesting.MakeClusterQueue(fmt.Sprintf("cq%d", i)).Cohort(cohort)
		var fqs []berthv1alpha1.FlavorQuotas
		for _, f := range s.flavors[:1+r.Intn(2)] {
			var limits []string
			if cohort != "" {
				limits = []string{pick(r, "", "", fmt.Sprint(r.Intn(5))), ""}
				if r.Intn(3) == 0 {
					limits[1] = "LL"
				}
			}
			nominal := r.Intn(9)
			if len(limits) > 1 && limits[1] == "LL" {
				limits[1] = fmt.Sprint(r.Intn(nominal + 1))
			}
			if s.noLimits {
				limits = nil
			}
			fqs = append(fqs, utiltesting.MakeFlavorQuotas(f).Resource("gpu", fmt.Sprint(nominal), limits...).Obj())
		}
		w.ResourceGroup(fqs...)
		w.Strategy(berthv1alpha1.QueueingStrategy(pick(r, "BestEffortFIFO", "StrictFIFO")))
		w.Fungibility(berthv1alpha1.FlavorFungibility{
			WhenCanBorrow:  berthv1alpha1.FlavorFungibilityPolicy(pick(r, "MayStopSearch", "TryNextFlavor")),
			WhenCanPreempt: berthv1alpha1.FlavorFungibilityPolicy(pick(r, "MayStopSearch", "TryNextFlavor")),
		})
		w.Preemption(s.randomPreemption())
		if s.sched.fairSharing {
			w.Weight(pick(s.fair, "0", "1", "1", "2", "3"))
		}
		s.cqs[berthv1alpha1.ClusterQueueReference(w.Name)] = w.Obj()
		s.cache.AddOrUpdateClusterQueue(w.Obj())
		s.queues.AddOrUpdateClusterQueue(w.Obj())
	}
}

func (s *sim) randomPreemption() berthv1alpha1.ClusterQueuePreemption {
	r := s.rng
	p := berthv1alpha1.ClusterQueuePreemption{
		WithinClusterQueue:  berthv1alpha1.PreemptionPolicy(pick(r, "Never", "LowerPriority", "LowerOrNewerEqualPriority")),
		ReclaimWithinCohort: berthv1alpha1.PreemptionPolicy(pick(r, "Never", "LowerPriority", "Any")),
	}
	if p.ReclaimWithinCohort != "Never" && r.Intn(2) == 0 {
		p.BorrowWithinCohort.Policy = berthv1alpha1.PreemptionPolicyLowerPriority
		if r.Intn(2) == 0 {
			t := int32(r.Intn(4))
			p.BorrowWithinCohort.MaxPriorityThreshold = &t
		}
	}
	return p
}

func pick(r *rand.Rand, options ...string) string {
	return options[r.Intn(len(options))]
}

// addWorkloads queues up to n random workloads.
func (s *sim) addWorkloads(n int) {
	names := sortedCQs(s.cqs)
	for i := 0; i < n; i++ {
		s.nextID++
		ps := utiltesting.MakePodSet("main", int32(1+s.rng.Intn(3))).Request("gpu", fmt.Sprint(1+s.rng.Intn(3)))
		if s.rng.Intn(4) == 0 {
			ps.MinCount(1)
		}
		w := utiltesting.MakeWorkload(fmt.Sprintf("w%d", s.nextID), "ns").Priority(int32(s.rng.Intn(4))).PodSets(*ps.Obj()).Obj()
		w.CreationTimestamp = metav1.NewTime(s.now)
		cq := names[s.rng.Intn(len(names))]
		s.objs[workload.Key(w)] = w
		s.cqOf[workload.Key(w)] = cq
		if err := s.queues.AddOrUpdateWorkload(w, cq); err != nil {
			panic(err)
		}
	}
}

func sortedCQs(m map[berthv1alpha1.ClusterQueueReference]*berthv1alpha1.ClusterQueue) []berthv1alpha1.ClusterQueueReference {
	names := make([]berthv1alpha1.ClusterQueueReference, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// applyDecisions does what the controllers would after a cycle: admitted
// workloads are written with their admission, preempted ones are marked
// evicted.
func (s *sim) applyDecisions() {
	for key, adm := range s.admitted {
		w := s.objs[key].DeepCopy()
		w.Status.Admission = adm
		setCond(w, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, s.now)
		setCond(w, berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue, s.now)
		// As workload.Admit: no longer evicted.
		for _, typ := range []string{berthv1alpha1.WorkloadEvicted, berthv1alpha1.WorkloadPreempted, berthv1alpha1.WorkloadRequeued} {
			if workload.FindCondition(w, typ) != nil {
				setCond(w, typ, metav1.ConditionFalse, s.now)
			}
		}
		s.objs[key] = w
		s.cache.AddOrUpdateWorkload(w)
	}
	for _, p := range s.preempted {
		w := s.objs[p.victim].DeepCopy()
		setCond(w, berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, s.now)
		s.objs[p.victim] = w
		s.cache.AddOrUpdateWorkload(w)
	}
}

// settle releases the quota of evicted workloads and requeues them, and
// finishes some admitted workloads, telling the queues about freed quota.
func (s *sim) settle(finishOneIn int) {
	for _, key := range sortedKeys(s.objs) {
		w := s.objs[key]
		if !workload.HasQuotaReservation(w) {
			continue
		}
		switch {
		case workload.IsEvicted(w):
			w = w.DeepCopy()
			w.Status.Admission = nil
			setCond(w, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, s.now)
			setCond(w, berthv1alpha1.WorkloadAdmitted, metav1.ConditionFalse, s.now)
			setCond(w, berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, s.now)
			s.objs[key] = w
			s.cache.AddOrUpdateWorkload(w)
			if err := s.queues.AddOrUpdateWorkload(w, s.cqOf[key]); err != nil {
				panic(err)
			}
		case s.rng.Intn(finishOneIn) == 0:
			s.finished++
			s.cache.DeleteWorkload(key)
			delete(s.objs, key)
		default:
			continue
		}
		s.queues.QueueInadmissible(s.cqOf[key])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func setCond(w *berthv1alpha1.Workload, typ string, status metav1.ConditionStatus, at time.Time) {
	c := metav1.Condition{Type: typ, Status: status, Reason: "Sim", LastTransitionTime: metav1.NewTime(at)}
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == typ {
			if w.Status.Conditions[i].Status != status {
				w.Status.Conditions[i] = c
			}
			return
		}
	}
	w.Status.Conditions = append(w.Status.Conditions, c)
}

// quantity reads a quantity as an int64 for the checks.
func quantity(q resource.Quantity) int64 { return q.Value() }
