package scheduler

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// traceJob is a multi-node job of a trace: pods of 8 GPUs (one node each)
// arriving at a minute, running for a number of minutes.
type traceJob struct {
	arrive, minutes, pods int
}

// fabricTrace is a seeded trace of 400 jobs over 200 minutes: mostly
// single nodes, some gangs of 2 and 4, a few of 8.
func fabricTrace(seed int64) []traceJob {
	rng := rand.New(rand.NewSource(seed))
	jobs := make([]traceJob, 400)
	for i := range jobs {
		pods := []int{1, 1, 1, 1, 2, 2, 4, 4, 8}[rng.Intn(9)]
		jobs[i] = traceJob{arrive: rng.Intn(200), minutes: 5 + rng.Intn(40), pods: pods}
	}
	slices.SortStableFunc(jobs, func(a, b traceJob) int { return a.arrive - b.arrive })
	return jobs
}

// gridNodes are blocks of racks of hosts named b<i>-r<j>-h<k>, each with
// free.
func gridNodes(blocks, racks, hosts int, free resources.Requests) []topology.Node {
	var nodes []topology.Node
	for b := range blocks {
		for r := range racks {
			for h := range hosts {
				name := fmt.Sprintf("b%d-r%d-h%d", b, r, h)
				nodes = append(nodes, topology.Node{Name: name,
					Labels: map[string]string{blockLabel: fmt.Sprintf("b%d", b), rackLabel: fmt.Sprintf("b%d-r%d", b, r), hostLabel: name},
					Free:   maps.Clone(free)})
			}
		}
	}
	return nodes
}

// traceResult is what a replay measured.
type traceResult struct {
	makespan int
	// spread is the share of multi-node gangs whose pods span more racks
	// than they need; stranded, the mean GPUs free in racks too small for a
	// gang of 4 nodes, sampled each minute while any job waits.
	spread, stranded float64
}

// replay runs the trace minute by minute through the scheduler. With
// topology every gang of 2 to 4 nodes requires a rack, and of 8 a block;
// without it
// the flavor has no Topology, and the pods go, as a scheduler blind to
// racks would put them, on the first free nodes in the nodes' order. The
// quota is the fabric's 256 GPUs, so that only the nodes' layout differs.
func replay(withTopology bool, jobs []traceJob) traceResult {
	// The local cluster's fabric: 2 blocks of 4 racks of 4 hosts of 8 GPUs.
	nodes := gridNodes(2, 4, 4, resources.Requests{"nvidia.com/gpu": 8, corev1.ResourcePods: 110})
	levels := []string{blockLabel, rackLabel, hostLabel}
	rf := utiltesting.MakeResourceFlavor("h100")
	if withTopology {
		rf = fabricFlavor()
	}
	e := newEnv(envInputs{
		flavors: []*berthv1alpha1.ResourceFlavor{rf},
		queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "256")).Obj()},
	})
	// busy are the nodes a job runs on; the fabric the engine sees is
	// rebuilt from them each minute, as the tracker would from the pods.
	busy := map[string]bool{}
	table := &nodeTable{bound: map[string]map[string]int32{}}
	e.cache.SetFabrics(table)
	type run struct {
		end   int
		nodes []string
	}
	running := map[string]run{}
	index := map[string]int{}
	var res traceResult
	var done, gangs, spread, samples int
	var stranded float64
	next := 0
	for minute := 0; done < len(jobs); minute++ {
		if minute == 100_000 {
			panic(fmt.Sprintf("the trace did not finish: %d of %d jobs done", done, len(jobs)))
		}
		for _, k := range slices.Sorted(maps.Keys(running)) {
			if r := running[k]; r.end <= minute {
				for _, n := range r.nodes {
					busy[n] = false
				}
				e.cache.ForgetWorkload(k)
				delete(running, k)
				done++
				res.makespan = minute
			}
		}
		for ; next < len(jobs) && jobs[next].arrive <= minute; next++ {
			j := jobs[next]
			ps := utiltesting.MakePodSet("main", int32(j.pods)).Request("nvidia.com/gpu", "8")
			switch {
			case j.pods > 4:
				// More than a rack's hosts: one block.
				ps.Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, blockLabel)
			case j.pods > 1:
				ps.Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, rackLabel)
			}
			wl := mkWL(fmt.Sprintf("j%03d", next), "ns").Queue("q").Created(time.Duration(next) * time.Millisecond).PodSets(*ps.Obj()).Obj()
			index["ns/"+wl.Name] = next
			_ = e.queues.AddOrUpdateWorkload(wl, "q")
		}
		table.nodes = table.nodes[:0]
		for _, n := range nodes {
			free := resources.Requests{"nvidia.com/gpu": 8, corev1.ResourcePods: 110}
			if busy[n.Name] {
				free["nvidia.com/gpu"] = 0
			}
			table.nodes = append(table.nodes, topology.Node{Name: n.Name, Labels: n.Labels, Free: free})
		}
		e.queues.QueueAllInadmissible()
		for range 100 {
			before := len(e.applier.admitted)
			e.sched.Schedule(context.Background())
			if len(e.applier.admitted) == before {
				break
			}
		}
		for _, k := range slices.Sorted(maps.Keys(e.applier.admitted)) {
			adm := e.applier.admitted[k]
			delete(e.applier.admitted, k)
			j := jobs[index[k]]
			var placed []string
			if ta := adm.PodSetAssignments[0].TopologyAssignment; ta != nil {
				for _, d := range ta.Domains {
					for range d.Count {
						placed = append(placed, d.Values[len(d.Values)-1])
					}
				}
			} else {
				for _, n := range nodes {
					if len(placed) < j.pods && !busy[n.Name] {
						placed = append(placed, n.Name)
					}
				}
			}
			racks := map[string]bool{}
			for _, n := range placed {
				busy[n] = true
				racks[n[:len("b0-r0")]] = true
			}
			if j.pods > 1 {
				gangs++
				// A gang of 8 needs two racks at least.
				if len(racks) > (j.pods+3)/4 {
					spread++
				}
			}
			running[k] = run{end: minute + j.minutes, nodes: placed}
		}
		if e.queues.Pending("q") > 0 {
			free := make([]topology.Node, 0, len(nodes))
			for _, n := range nodes {
				g := int64(8)
				if busy[n.Name] {
					g = 0
				}
				free = append(free, topology.Node{Name: n.Name, Labels: n.Labels, Free: resources.Requests{"nvidia.com/gpu": g}})
			}
			f := topology.NewFabric(levels, free)
			stranded += float64(f.Stranded(topology.Request{PerPod: resources.Requests{"nvidia.com/gpu": 8}, Count: 4, Level: 1, Required: true})["nvidia.com/gpu"])
			samples++
		}
	}
	res.spread = float64(spread) / float64(max(gangs, 1))
	if samples > 0 {
		res.stranded = stranded / float64(samples)
	}
	return res
}

// BenchmarkTopologyTrace replays a trace of 400 jobs of 1 to 8 whole
// nodes on the 32-node fabric, with the gangs required in one rack (one
// block for 8) and blind to racks: makespan in minutes, the share of gangs that span racks,
// and the mean GPUs stranded in racks too small for a gang of 4 while jobs
// wait. The figures are counts of a deterministic replay, not timings.
func BenchmarkTopologyTrace(b *testing.B) {
	jobs := fabricTrace(1)
	for _, withTopology := range []bool{true, false} {
		name := "blind"
		if withTopology {
			name = "rack"
		}
		b.Run(name, func(b *testing.B) {
			var r traceResult
			for range b.N {
				r = replay(withTopology, jobs)
			}
			b.ReportMetric(float64(r.makespan), "makespan-minutes")
			b.ReportMetric(r.spread*100, "%gangs-spread")
			b.ReportMetric(r.stranded, "stranded-gpus")
		})
	}
}
