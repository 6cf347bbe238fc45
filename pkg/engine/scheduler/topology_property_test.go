package scheduler

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestTopologyInvariants runs seeded random fabrics and gangs through the
// scheduler, with finishes between cycles, and checks from the nodes, not
// from the engine's books: no node holds more GPUs than it has, every
// admitted gang's pods are where its annotation asks (one domain of a
// required level) and add up to its count, and, once the scheduler is
// quiet, no gang that requires a level waits while some domain of that
// level has room for it (counted here from the nodes by brute force).
func TestTopologyInvariants(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		if err := runTopologyScenario(seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

type topoGang struct {
	wl    *berthv1alpha1.Workload
	level string // "" unless required
	count int32
	gpus  int64
}

func runTopologyScenario(seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	levels := []string{blockLabel, rackLabel, hostLabel}
	var nodes []topology.Node
	used := map[string]int64{}
	for b := range 1 + rng.Intn(3) {
		for r := range 1 + rng.Intn(3) {
			for h := range 1 + rng.Intn(4) {
				name := fmt.Sprintf("b%d-r%d-h%d", b, r, h)
				used[name] = int64(rng.Intn(3)) * 4
				nodes = append(nodes, topology.Node{Name: name,
					Labels: map[string]string{blockLabel: fmt.Sprintf("b%d", b), rackLabel: fmt.Sprintf("b%d-r%d", b, r), hostLabel: name},
					Free:   resources.Requests{"nvidia.com/gpu": 8 - used[name], corev1.ResourcePods: 110}})
			}
		}
	}
	// Odd seeds preempt lower priorities to free domains.
	var policy berthv1alpha1.ClusterQueuePreemption
	if seed%2 == 1 {
		policy.WithinClusterQueue = berthv1alpha1.PreemptionPolicyLowerPriority
	}
	e := newEnv(envInputs{
		flavors: []*berthv1alpha1.ResourceFlavor{fabricFlavor()},
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "100000")).Preemption(policy).Obj()},
	})
	e.cache.SetFabrics(staticFabric{topology.NewFabric(levels, nodes)})
	// gangs are the gangs not finished; running, those admitted.
	gangs := map[string]*topoGang{}
	running := map[string]bool{}
	for step := range 12 {
		for i := range rng.Intn(5) {
			g := &topoGang{count: int32(1 + rng.Intn(5)), gpus: []int64{1, 2, 4, 8}[rng.Intn(4)]}
			ps := utiltesting.MakePodSet("main", g.count).Request("nvidia.com/gpu", fmt.Sprint(g.gpus))
			switch rng.Intn(5) {
			case 0:
			case 1:
				g.level = rackLabel
				ps.Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel)
			case 2:
				g.level = blockLabel
				ps.Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, blockLabel)
			case 3:
				g.level = hostLabel
				ps.Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, hostLabel)
			case 4:
				ps.Annotation(berthv1alpha1.PodSetPreferredTopologyAnnotation, rackLabel)
			}
			g.wl = mkWL(fmt.Sprintf("s%d-w%d", step, i), "ns").Queue("q").Priority(int32(rng.Intn(4))).PodSets(*ps.Obj()).Obj()
			gangs["ns/"+g.wl.Name] = g
			if err := e.queues.AddOrUpdateWorkload(g.wl, "q"); err != nil {
				return err
			}
		}
		// Some running gangs finish.
		for _, key := range slices.Sorted(func(yield func(string) bool) {
			for k := range running {
				if !yield(k) {
					return
				}
			}
		}) {
			if rng.Intn(3) == 0 {
				e.cache.ForgetWorkload(key)
				delete(running, key)
				delete(gangs, key)
			}
		}
		// Until the scheduler decides nothing new for three cycles: each
		// cycle tries a head, and one that does not fit is set aside until
		// the next step. The victims of a cycle stop and wait again at
		// once, their pods leaving their nodes.
		e.queues.QueueAllInadmissible()
		for quiet, cycle := 0, 0; quiet < 3; cycle++ {
			if cycle == 200 {
				return fmt.Errorf("step %d: the scheduler still decides after 200 cycles", step)
			}

			said := maps.Clone(e.applier.pending)
			before := len(e.applier.admitted)
			e.sched.Schedule(context.Background())
			decided := len(e.applier.admitted) != before || len(e.applier.preempted) > 0 || !maps.Equal(said, e.applier.pending)
			for key := range e.applier.admitted {
				if gangs[key] != nil && e.cache.HoldsQuota(key) {
					running[key] = true
				}
			}
			if err := evictVictims(e, gangs, running); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			if decided {
				quiet = 0
			} else {
				quiet++
			}
		}
		for key := range e.applier.admitted {
			if _, done := running[key]; !done && gangs[key] != nil && e.cache.HoldsQuota(key) {
				running[key] = true
			}
		}
		if err := checkTopology(nodes, used, gangs, running, e, true); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
	}
	return nil
}

// evictVictims plays the victims of the last cycle stopping: their quota
// and nodes are released and they wait again.
func evictVictims(e *env, gangs map[string]*topoGang, running map[string]bool) error {
	for _, key := range slices.Sorted(maps.Keys(e.applier.preempted)) {
		g := gangs[key]
		if g == nil || !running[key] {
			return fmt.Errorf("%s preempted while not running", key)
		}
		// "Preempted to accommodate workload ns/NAME (priority P) ..."
		by := gangs[strings.Fields(e.applier.preemptMsg[key])[4]]
		if by == nil || *by.wl.Spec.Priority <= *g.wl.Spec.Priority {
			return fmt.Errorf("%s (priority %d) preempted: %s", key, *g.wl.Spec.Priority, e.applier.preemptMsg[key])
		}
		delete(running, key)
		e.cache.ForgetWorkload(key)
		delete(e.applier.admitted, key)
		if err := e.queues.AddOrUpdateWorkload(g.wl, "q"); err != nil {
			return err
		}
	}
	clear(e.applier.preempted)
	return nil
}

// checkTopology checks the nodes and the placements of the running gangs
// and, when live, that no gang that requires a level waits beside room.
func checkTopology(nodes []topology.Node, used map[string]int64, gangs map[string]*topoGang, running map[string]bool, e *env, live bool) error {
	onNode := map[string]int64{}
	for n, u := range used {
		onNode[n] = u
	}
	for key := range running {
		g, adm := gangs[key], e.applier.admitted[key]
		ta := adm.PodSetAssignments[0].TopologyAssignment
		if ta == nil {
			return fmt.Errorf("%s admitted without a topology assignment", key)
		}
		var total int32
		levelAt := slices.Index(ta.Levels, g.level)
		for _, d := range ta.Domains {
			total += d.Count
			onNode[d.Values[len(d.Values)-1]] += int64(d.Count) * g.gpus
			if g.level != "" && d.Values[levelAt] != ta.Domains[0].Values[levelAt] {
				return fmt.Errorf("%s requires one %s and is placed in %+v", key, g.level, ta.Domains)
			}
		}
		if total != g.count {
			return fmt.Errorf("%s has %d pods placed, want %d", key, total, g.count)
		}
	}
	for n, u := range onNode {
		if u > 8 {
			return fmt.Errorf("node %s holds %d GPUs of 8", n, u)
		}
	}
	for key, g := range gangs {
		if !live || g.level == "" || e.cache.HoldsQuota(key) {
			continue
		}
		room := map[string]int64{}
		for _, n := range nodes {
			room[n.Labels[g.level]] += (8 - onNode[n.Name]) / g.gpus
		}
		for domain, r := range room {
			if r >= int64(g.count) {
				return fmt.Errorf("%s (%d pods of %d GPUs in one %s) waits although %s has room for %d; it says: %s (queued %v, order %v, admitted once %v)",
					key, g.count, g.gpus, g.level, domain, r, e.applier.pending[key], e.queues.Queued(key, "q"), e.queues.Order("q"), e.applier.admitted[key] != nil)
			}
		}
	}
	return nil
}
