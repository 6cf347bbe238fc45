package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

const (
	rackLabel  = "cloud.berth.dev/rack"
	blockLabel = "cloud.berth.dev/block"
	hostLabel  = "kubernetes.io/hostname"
)

// nodeTable is the nodes of a fabric for the scheduler's tests, in place
// of the controller's view of nodes and pods: racks of four hosts of 8
// GPUs, less what bound pods take.
type nodeTable struct {
	nodes []topology.Node
	bound map[string]map[string]int32
}

func newNodeTable(racks int, used map[string]int64) *nodeTable {
	t := &nodeTable{bound: map[string]map[string]int32{}}
	for r := range racks {
		for h := range 4 {
			name := fmt.Sprintf("r%d-h%d", r, h)
			t.nodes = append(t.nodes, topology.Node{
				Name:   name,
				Labels: map[string]string{blockLabel: "b0", rackLabel: fmt.Sprintf("r%d", r), hostLabel: name},
				Free:   resources.Requests{"nvidia.com/gpu": 8 - used[name], corev1.ResourcePods: 110},
			})
		}
	}
	return t
}

func (t *nodeTable) Fabric(rf *berthv1alpha1.ResourceFlavor) *topology.Fabric {
	return topology.NewFabric([]string{blockLabel, rackLabel, hostLabel}, t.nodes).Clone()
}

func (t *nodeTable) Bound(key string) map[string]int32 { return maps.Clone(t.bound[key]) }

func fabricFlavor() *berthv1alpha1.ResourceFlavor {
	rf := utiltesting.MakeResourceFlavor("h100")
	rf.Spec.TopologyName = ptr.To[berthv1alpha1.TopologyReference]("fabric")
	return rf
}

// gang is a workload of count pods of 8 GPUs, with a topology annotation.
func gang(name string, count int32, annotation, level string) *berthv1alpha1.Workload {
	ps := utiltesting.MakePodSet("main", count).Request("nvidia.com/gpu", "8")
	if annotation != "" {
		ps.Annotation(annotation, level)
	}
	return mkWL(name, "ns").Queue("q").PodSets(*ps.Obj()).Obj()
}

// domains renders an admission's topology assignment as "host:count".
func domains(adm *berthv1alpha1.Admission) string {
	ta := adm.PodSetAssignments[0].TopologyAssignment
	if ta == nil {
		return "no topology assignment"
	}
	var parts []string
	for _, d := range ta.Domains {
		parts = append(parts, fmt.Sprintf("%s:%d", d.Values[len(d.Values)-1], d.Count))
	}
	return strings.Join(parts, " ")
}

func TestScheduleOnTopology(t *testing.T) {
	cases := map[string]struct {
		used         map[string]int64
		pending      []*berthv1alpha1.Workload
		admitted     []*berthv1alpha1.Workload
		bound        map[string]map[string]int32
		wantAdmitted map[string]string
		wantPending  map[string]string
	}{
		"two gangs of a rack each, in one cycle, and a third that waits for a rack with numbers": {
			pending: []*berthv1alpha1.Workload{
				gang("a", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel),
				gang("b", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel),
				gang("c", 2, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel),
			},
			wantAdmitted: map[string]string{"ns/a": "r0-h0:1 r0-h1:1 r0-h2:1 r0-h3:1", "ns/b": "r1-h0:1 r1-h1:1 r1-h2:1 r1-h3:1"},
			wantPending: map[string]string{"ns/c": "Pending: The workload does not fit: podset main: flavor h100: " +
				"needs 2 pods (nvidia.com/gpu: 8 each pod) in one cloud.berth.dev/rack: the best, b0/r0, has room for 0; 1 other for 0"},
		},
		"quota that fits but no rack: pods bound elsewhere leave room for 3 in each rack": {
			used:    map[string]int64{"r0-h0": 1, "r1-h3": 8},
			pending: []*berthv1alpha1.Workload{gang("a", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel)},
			wantPending: map[string]string{"ns/a": "Pending: The workload does not fit: podset main: flavor h100: " +
				"needs 4 pods (nvidia.com/gpu: 8 each pod) in one cloud.berth.dev/rack: the best, b0/r0, has room for 3; 1 other for 3"},
		},
		"a preferred rack spreads over two when none holds it, the one with more room first": {
			used:         map[string]int64{"r0-h0": 8},
			pending:      []*berthv1alpha1.Workload{gang("a", 5, berthv1alpha1.PodSetPreferredTopologyAnnotation, rackLabel)},
			wantAdmitted: map[string]string{"ns/a": "r0-h1:1 r1-h0:1 r1-h1:1 r1-h2:1 r1-h3:1"},
		},
		"a gang without annotations is placed too, so that its nodes are counted": {
			pending:      []*berthv1alpha1.Workload{gang("a", 2, "", "")},
			wantAdmitted: map[string]string{"ns/a": "r0-h0:1 r0-h1:1"},
		},
		"an admitted gang whose pods are not bound yet keeps its rack": {
			admitted: []*berthv1alpha1.Workload{
				admittedOn(gang("old", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel), "r0-h0", "r0-h1", "r0-h2", "r0-h3"),
			},
			pending:      []*berthv1alpha1.Workload{gang("a", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel)},
			wantAdmitted: map[string]string{"ns/a": "r1-h0:1 r1-h1:1 r1-h2:1 r1-h3:1"},
		},
		"its bound pods are counted once, from the nodes": {
			used: map[string]int64{"r0-h0": 8, "r0-h1": 8},
			admitted: []*berthv1alpha1.Workload{
				admittedOn(gang("old", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel), "r0-h0", "r0-h1", "r0-h2", "r0-h3"),
			},
			bound: map[string]map[string]int32{"ns/old": {"r0-h0": 1, "r0-h1": 1}},
			pending: []*berthv1alpha1.Workload{
				gang("a", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel),
				gang("b", 1, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel),
			},
			wantAdmitted: map[string]string{"ns/a": "r1-h0:1 r1-h1:1 r1-h2:1 r1-h3:1"},
			wantPending: map[string]string{"ns/b": "Pending: The workload does not fit: podset main: flavor h100: " +
				"needs 1 pod (nvidia.com/gpu: 8 each pod) in one cloud.berth.dev/rack: the best, b0/r0, has room for 0; 1 other for 0"},
		},
		"partial admission takes the most pods a rack holds": {
			used: map[string]int64{"r0-h0": 8, "r1-h0": 8, "r1-h1": 8},
			pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").PodSets(*utiltesting.MakePodSet("main", 6).
				Request("nvidia.com/gpu", "8").MinCount(2).Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel).Obj()).Obj()},
			wantAdmitted: map[string]string{"ns/a": "r0-h1:1 r0-h2:1 r0-h3:1"},
		},
		"a level the topology does not have": {
			pending: []*berthv1alpha1.Workload{gang("a", 1, berthv1alpha1.PodSetRequiredTopologyAnnotation, "cloud.berth.dev/row")},
			wantPending: map[string]string{"ns/a": "Pending: The workload does not fit: podset main: flavor h100: " +
				"its Topology fabric has no level cloud.berth.dev/row"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(envInputs{
				flavors:  []*berthv1alpha1.ResourceFlavor{fabricFlavor()},
				queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "128")).Obj()},
				admitted: tc.admitted,
				pending:  tc.pending,
			})
			table := newNodeTable(2, tc.used)
			if tc.bound != nil {
				table.bound = tc.bound
			}
			e.cache.SetFabrics(table)
			e.sched.Schedule(context.Background())
			got := map[string]string{}
			for k, adm := range e.applier.admitted {
				got[k] = domains(adm)
			}
			if diff := cmp.Diff(tc.wantAdmitted, got, cmpEmpty); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPending, e.applier.pending, cmpEmpty); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
		})
	}
}

// admittedOn is wl admitted in q on h100, one pod on each of hosts.
func admittedOn(wl *berthv1alpha1.Workload, hosts ...string) *berthv1alpha1.Workload {
	ta := &berthv1alpha1.TopologyAssignment{Levels: []string{blockLabel, rackLabel, hostLabel}}
	for _, h := range hosts {
		ta.Domains = append(ta.Domains, berthv1alpha1.TopologyDomainAssignment{Values: []string{"b0", "r" + h[1:2], h}, Count: 1})
	}
	count := int32(len(hosts))
	adm := &berthv1alpha1.Admission{ClusterQueue: "q", PodSetAssignments: []berthv1alpha1.PodSetAssignment{{
		Name: "main", Count: &count, Flavors: map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{"nvidia.com/gpu": "h100"},
		ResourceUsage:      corev1.ResourceList{"nvidia.com/gpu": resources.Quantity("nvidia.com/gpu", 8*int64(count))},
		TopologyAssignment: ta,
	}}}
	out := utiltesting.MakeWorkload(wl.Name, wl.Namespace).PodSets(wl.Spec.PodSets...).Admitted(adm).Obj()
	out.Spec.Priority = wl.Spec.Priority
	if info := workload.NewInfo(out); len(info.Placements) != 1 {
		panic("the admitted gang has no placement")
	}
	return out
}

// staticFabric is a fabric that no pod event changes, as the tracker's
// between two events: each snapshot gets a copy.
type staticFabric struct{ f *topology.Fabric }

func (s staticFabric) Fabric(*berthv1alpha1.ResourceFlavor) *topology.Fabric { return s.f.Clone() }
func (staticFabric) Bound(string) map[string]int32                           { return nil }

// BenchmarkTopologyAdmission admits 10,000 workloads of two pods of 1 cpu
// each, spread over 1,000 ClusterQueues, onto 1,024 nodes of 32 cpus (8
// blocks of 8 racks of 16 hosts): with the flavor's Topology and every
// podset required in one rack, and without a Topology. The nodes hold
// 32,768 cpus and the workloads need 20,000, so both admit them all.
func BenchmarkTopologyAdmission(b *testing.B) {
	const pending = 10_000
	nodes := gridNodes(8, 8, 16, resources.Requests{corev1.ResourceCPU: 32_000, corev1.ResourcePods: 110})
	fab := topology.NewFabric([]string{blockLabel, rackLabel, hostLabel}, nodes)
	wls := make([]*berthv1alpha1.Workload, pending)
	for i := range wls {
		ps := utiltesting.MakePodSet("main", 2).Request("cpu", "1").Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel)
		wls[i] = utiltesting.MakeWorkload(fmt.Sprintf("w%06d", i), "ns").Created(time.Duration(i) * time.Millisecond).PodSets(*ps.Obj()).Obj()
	}
	for _, withTopology := range []bool{true, false} {
		name := "none"
		if withTopology {
			name = "rack"
		}
		b.Run(name, func(b *testing.B) {
			var decisions int
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c, m := benchTopology("0", berthv1alpha1.ClusterQueuePreemption{})
				if withTopology {
					rf := utiltesting.MakeResourceFlavor("h100")
					rf.Spec.TopologyName = ptr.To[berthv1alpha1.TopologyReference]("fabric")
					c.AddOrUpdateResourceFlavor(rf)
					c.SetFabrics(staticFabric{fab})
				}
				for j, w := range wls {
					_ = m.AddOrUpdateWorkload(w, berthv1alpha1.ClusterQueueReference(fmt.Sprintf("cq-%04d", j%benchQueues)))
				}
				s := New(c, m, &nopApplier{})
				c.Snapshot()
				b.StartTimer()
				n, took := drain(s)
				decisions, elapsed = decisions+n, elapsed+took
				if n != pending {
					b.Fatalf("admitted %d of %d", n, pending)
				}
			}
			b.ReportMetric(float64(decisions)/elapsed.Seconds(), "decisions/s")
		})
	}
}

// TestDefragmentation: a gang of a rack whose quota fits but which no rack
// has room for preempts the lower-priority work of its queue in the rack
// that needs the fewest evictions, and says which rack and why.
func TestDefragmentation(t *testing.T) {
	lower := berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority}
	single := func(name string, priority int32, host string) *berthv1alpha1.Workload {
		wl := gang(name, 1, "", "")
		wl.Spec.Priority = &priority
		return admittedOn(wl, host)
	}
	preemptor := func() *berthv1alpha1.Workload {
		wl := gang("big", 4, berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel)
		wl.Spec.Priority = ptr.To[int32](10)
		return wl
	}
	cases := map[string]struct {
		policy        berthv1alpha1.ClusterQueuePreemption
		admitted      []*berthv1alpha1.Workload
		wantPreempted []string
		wantWhy       string
		wantPending   string
	}{
		"the rack with the fewest victims": {
			policy:        lower,
			admitted:      []*berthv1alpha1.Workload{single("l1", 1, "r0-h0"), single("l2", 1, "r0-h1"), single("m", 5, "r1-h0")},
			wantPreempted: []string{"ns/m"},
			wantWhy:       "to free cloud.berth.dev/rack b0/r1 for its podset main (4 pods), which no cloud.berth.dev/rack had room for",
		},
		"not a rack whose work it may not preempt": {
			policy:        lower,
			admitted:      []*berthv1alpha1.Workload{single("l1", 1, "r0-h0"), single("l2", 1, "r0-h1"), single("top", 50, "r1-h0")},
			wantPreempted: []string{"ns/l1", "ns/l2"},
			wantWhy:       "to free cloud.berth.dev/rack b0/r0",
		},
		"a queue that never preempts waits, saying why": {
			admitted:    []*berthv1alpha1.Workload{single("l1", 1, "r0-h0"), single("m", 5, "r1-h0")},
			wantPending: "needs 4 pods (nvidia.com/gpu: 8 each pod) in one cloud.berth.dev/rack: the best, b0/r0, has room for 3; 1 other for 3",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(envInputs{
				flavors:  []*berthv1alpha1.ResourceFlavor{fabricFlavor()},
				queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "128")).Preemption(tc.policy).Obj()},
				admitted: tc.admitted,
				pending:  []*berthv1alpha1.Workload{preemptor()},
			})
			// The admitted singles' pods are bound: the nodes count them.
			table := newNodeTable(2, nil)
			for _, wl := range tc.admitted {
				host := wl.Status.Admission.PodSetAssignments[0].TopologyAssignment.Domains[0].Values[2]
				table.bound["ns/"+wl.Name] = map[string]int32{host: 1}
				for i := range table.nodes {
					if table.nodes[i].Name == host {
						table.nodes[i].Free["nvidia.com/gpu"] -= 8
					}
				}
			}
			e.cache.SetFabrics(table)
			e.sched.Schedule(context.Background())
			var got []string
			for k := range e.applier.preempted {
				got = append(got, k)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.wantPreempted, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("preempted (-want +got):\n%s", diff)
			}
			for _, k := range got {
				if msg := e.applier.preemptMsg[k]; !strings.Contains(msg, tc.wantWhy) {
					t.Errorf("%s is preempted with %q, want it to say %q", k, msg, tc.wantWhy)
				}
			}
			if tc.wantPending != "" && !strings.Contains(e.applier.pending["ns/big"], tc.wantPending) {
				t.Errorf("the gang waits with %q, want %q", e.applier.pending["ns/big"], tc.wantPending)
			}
		})
	}
}
