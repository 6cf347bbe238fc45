package topology

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/pkg/engine/resources"
)

const (
	block = "cloud.berth.dev/block"
	rack  = "cloud.berth.dev/rack"
	host  = "kubernetes.io/hostname"
	gpu   = corev1.ResourceName("nvidia.com/gpu")
)

var levels = []string{block, rack, host}

// fabric is blocks x racks x hosts nodes named b<i>-r<j>-h<k>, each with
// the free GPUs free gives it (8 when it does not name it).
func fabric(blocks, racks, hosts int, free map[string]int64) *Fabric {
	var nodes []Node
	for b := range blocks {
		for r := range racks {
			for h := range hosts {
				name := fmt.Sprintf("b%d-r%d-h%d", b, r, h)
				g, ok := free[name]
				if !ok {
					g = 8
				}
				nodes = append(nodes, Node{
					Name:   name,
					Labels: map[string]string{block: fmt.Sprintf("b%d", b), rack: fmt.Sprintf("b%d-r%d", b, r), host: name},
					Free:   resources.Requests{gpu: g, corev1.ResourcePods: 110},
				})
			}
		}
	}
	return NewFabric(levels, nodes)
}

// placed renders an assignment as "node:count" pairs.
func placed(a *Assignment) string {
	var parts []string
	for _, d := range a.Domains {
		parts = append(parts, fmt.Sprintf("%s:%d", d.Values[len(d.Values)-1], d.Count))
	}
	return strings.Join(parts, " ")
}

func TestFind(t *testing.T) {
	gpus := func(n int64) resources.Requests { return resources.Requests{gpu: n, corev1.ResourcePods: 1} }
	cases := map[string]struct {
		fabric *Fabric
		req    Request
		want   string
		miss   string
	}{
		"a required rack takes a gang of four whole nodes in the first rack": {
			fabric: fabric(2, 2, 4, nil),
			req:    Request{PerPod: gpus(8), Count: 4, Level: 1, Required: true},
			want:   "b0-r0-h0:1 b0-r0-h1:1 b0-r0-h2:1 b0-r0-h3:1",
		},
		"the tightest rack: the one with the least room left after": {
			fabric: fabric(2, 2, 4, map[string]int64{"b0-r0-h0": 0, "b1-r1-h0": 0, "b1-r1-h1": 0}),
			req:    Request{PerPod: gpus(8), Count: 2, Level: 1, Required: true},
			want:   "b1-r1-h2:1 b1-r1-h3:1",
		},
		"within the rack, the fullest nodes first and the last share on the least room that holds it": {
			fabric: fabric(1, 1, 4, map[string]int64{"b0-r0-h0": 2, "b0-r0-h1": 8, "b0-r0-h2": 3, "b0-r0-h3": 6}),
			req:    Request{PerPod: gpus(1), Count: 11, Level: 1, Required: true},
			want:   "b0-r0-h1:8 b0-r0-h2:3",
		},
		"a required rack that no rack holds waits, with the best rack's room": {
			fabric: fabric(2, 2, 4, map[string]int64{"b0-r0-h0": 0, "b0-r1-h0": 4, "b0-r1-h1": 0, "b1-r0-h0": 0, "b1-r0-h1": 0, "b1-r1-h2": 0}),
			req:    Request{PerPod: gpus(8), Count: 4, Level: 1, Required: true},
			miss:   "needs 4 pods (nvidia.com/gpu: 8 each pod) in one cloud.berth.dev/rack: the best, b0/b0-r0, has room for 3; 1 other for 3, 2 for 2",
		},
		"a preferred rack spreads over the fewest racks of one block, filling a rack's last room before a whole rack's": {
			fabric: fabric(2, 4, 2, map[string]int64{"b0-r0-h0": 0, "b0-r1-h0": 0, "b0-r2-h0": 0, "b0-r3-h0": 0, "b1-r0-h0": 0}),
			req:    Request{PerPod: gpus(8), Count: 5, Level: 1},
			want:   "b1-r0-h1:1 b1-r1-h0:1 b1-r1-h1:1 b1-r2-h0:1 b1-r2-h1:1",
		},
		"a preferred block that none holds spreads over the fewest blocks": {
			fabric: fabric(3, 1, 2, map[string]int64{"b1-r0-h0": 0}),
			req:    Request{PerPod: gpus(8), Count: 3, Level: 0},
			want:   "b0-r0-h0:1 b0-r0-h1:1 b1-r0-h1:1",
		},
		"unconstrained, in the domains with the least room that hold it": {
			fabric: fabric(2, 2, 2, map[string]int64{"b0-r0-h0": 1, "b0-r0-h1": 1, "b0-r1-h0": 1}),
			req:    Request{PerPod: gpus(1), Count: 9, Level: -1},
			want:   "b0-r1-h0:1 b0-r1-h1:8",
		},
		"a preferred level that the whole fabric cannot hold waits": {
			fabric: fabric(1, 1, 2, nil),
			req:    Request{PerPod: gpus(8), Count: 3, Level: 1},
			miss:   "needs 3 pods (nvidia.com/gpu: 8 each pod) on the flavor's nodes: they have room for 2",
		},
		"a taint the pods do not tolerate keeps them off the node": {
			fabric: func() *Fabric {
				f := fabric(1, 2, 2, nil)
				f.nodes[0].Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
				return f
			}(),
			req:  Request{PerPod: gpus(8), Count: 2, Level: 1, Required: true},
			want: "b0-r1-h0:1 b0-r1-h1:1",
		},
		"a tolerated taint does not": {
			fabric: func() *Fabric {
				f := fabric(1, 2, 2, nil)
				f.nodes[0].Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
				return f
			}(),
			req: Request{PerPod: gpus(8), Count: 2, Level: 1, Required: true,
				Tolerations: []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}},
			want: "b0-r0-h0:1 b0-r0-h1:1",
		},
		"the pods' node selector leaves other nodes out": {
			fabric: fabric(1, 2, 2, nil),
			req:    Request{PerPod: gpus(8), Count: 1, Level: 1, Required: true, NodeSelector: map[string]string{host: "b0-r1-h1"}},
			want:   "b0-r1-h1:1",
		},
		"the pods' required node affinity leaves other nodes out": {
			fabric: fabric(1, 2, 2, nil),
			req: Request{PerPod: gpus(8), Count: 2, Level: 0, NodeAffinity: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: host, Operator: corev1.NodeSelectorOpIn, Values: []string{"b0-r0-h1", "b0-r1-h0"}},
				}}},
			}},
			want: "b0-r0-h1:1 b0-r1-h0:1",
		},
		"slices of two pods each in one host, in the rack with the fewest slices that hold them": {
			fabric: fabric(1, 2, 3, map[string]int64{"b0-r0-h0": 3, "b0-r0-h1": 3, "b0-r0-h2": 3, "b0-r1-h0": 4, "b0-r1-h1": 2}),
			req:    Request{PerPod: gpus(1), Count: 6, Level: 1, Required: true, SliceLevel: 2, SliceSize: 2},
			want:   "b0-r0-h0:2 b0-r0-h1:2 b0-r0-h2:2",
		},
		"slices that no rack holds, though its pods would fit": {
			fabric: fabric(1, 1, 3, map[string]int64{"b0-r0-h0": 3, "b0-r0-h1": 3, "b0-r0-h2": 1}),
			req:    Request{PerPod: gpus(1), Count: 6, Level: 1, Required: true, SliceLevel: 2, SliceSize: 2},
			miss:   "needs 3 slices of 2 pods (nvidia.com/gpu: 1 each pod), each slice in one kubernetes.io/hostname, in one cloud.berth.dev/rack: the best, b0/b0-r0, has room for 2",
		},
		"a count that is not a multiple of the slice size": {
			fabric: fabric(1, 1, 1, nil),
			req:    Request{PerPod: gpus(1), Count: 3, Level: 1, Required: true, SliceLevel: 2, SliceSize: 2},
			miss:   "3 pods do not make slices of 2 pods",
		},
		"the nodes' pod limit counts": {
			fabric: NewFabric(levels, []Node{
				{Name: "b0-r0-h0", Labels: map[string]string{block: "b0", rack: "b0-r0", host: "b0-r0-h0"}, Free: resources.Requests{gpu: 8, corev1.ResourcePods: 1}},
				{Name: "b0-r0-h1", Labels: map[string]string{block: "b0", rack: "b0-r0", host: "b0-r0-h1"}, Free: resources.Requests{gpu: 8, corev1.ResourcePods: 110}},
			}),
			req:  Request{PerPod: gpus(1), Count: 9, Level: 1, Required: true},
			want: "b0-r0-h0:1 b0-r0-h1:8",
		},
		"a resource no node has fits nowhere": {
			fabric: fabric(1, 1, 1, nil),
			req:    Request{PerPod: resources.Requests{"example.com/fpga": 1}, Count: 1, Level: -1},
			miss:   "needs 1 pod (example.com/fpga: 1 each pod) on the flavor's nodes: they have room for 0",
		},
		"a node without a level's label is not in the fabric": {
			fabric: NewFabric(levels, []Node{
				{Name: "n1", Labels: map[string]string{block: "b", host: "n1"}, Free: resources.Requests{gpu: 8}},
				{Name: "n2", Labels: map[string]string{block: "b", rack: "r", host: "n2"}, Free: resources.Requests{gpu: 8}},
			}),
			req:  Request{PerPod: resources.Requests{gpu: 8}, Count: 1, Level: 0, Required: true},
			want: "n2:1",
		},
		"nodes that share their values make one domain": {
			fabric: NewFabric([]string{block, rack}, []Node{
				{Name: "n1", Labels: map[string]string{block: "b", rack: "r"}, Free: resources.Requests{gpu: 8}},
				{Name: "n2", Labels: map[string]string{block: "b", rack: "r"}, Free: resources.Requests{gpu: 8}},
			}),
			req:  Request{PerPod: resources.Requests{gpu: 8}, Count: 2, Level: 1, Required: true},
			want: "r:2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, m := tc.fabric.Find(tc.req)
			if tc.miss != "" {
				if m == nil {
					t.Fatalf("Find placed %s, want a miss %q", placed(a), tc.miss)
				}
				if diff := cmp.Diff(tc.miss, m.String()); diff != "" {
					t.Errorf("miss (-want +got):\n%s", diff)
				}
				return
			}
			if m != nil {
				t.Fatalf("Find missed: %s", m)
			}
			if got := placed(a); got != tc.want {
				t.Errorf("Find placed %s, want %s", got, tc.want)
			}
		})
	}
}

// TestTakeLeavesTheRestToTheNextGang checks that a cycle's assignments
// add up: what one gang took, the next finds taken.
func TestTakeLeavesTheRestToTheNextGang(t *testing.T) {
	f := fabric(1, 2, 2, nil)
	req := Request{PerPod: resources.Requests{gpu: 8, corev1.ResourcePods: 1}, Count: 2, Level: 1, Required: true}
	cycle := f.Clone()
	for i, want := range []string{"b0-r0-h0:1 b0-r0-h1:1", "b0-r1-h0:1 b0-r1-h1:1"} {
		a, m := cycle.Find(req)
		if m != nil {
			t.Fatalf("gang %d: %s", i, m)
		}
		if got := placed(a); got != want {
			t.Errorf("gang %d placed %s, want %s", i, got, want)
		}
		cycle.Take(a, req.PerPod, nil)
	}
	if _, m := cycle.Find(req); m == nil || m.Room() != 0 {
		t.Errorf("a third gang: %v, want a miss with no room", m)
	}
	if a, m := f.Find(req); m != nil || placed(a) != "b0-r0-h0:1 b0-r0-h1:1" {
		t.Errorf("the fabric the cycle cloned changed: %v %v", a, m)
	}
}

// TestTakeCountsBoundPodsOnce checks that an admitted workload's pods that
// are bound, already in their nodes' free resources, are not taken again,
// and that those not bound yet are.
func TestTakeCountsBoundPodsOnce(t *testing.T) {
	f := fabric(1, 1, 2, map[string]int64{"b0-r0-h0": 0})
	perPod := resources.Requests{gpu: 8, corev1.ResourcePods: 1}
	a := &Assignment{Levels: levels, Domains: []Domain{{Values: []string{"b0", "b0-r0", "b0-r0-h0"}, Count: 1}, {Values: []string{"b0", "b0-r0", "b0-r0-h1"}, Count: 1}}}
	f.Take(a, perPod, map[string]int32{"b0-r0-h0": 1})
	if got := f.Free(1)[gpu]; got != 0 {
		t.Errorf("the node whose pod is not bound yet has %d GPUs free, want 0", got)
	}
	g := fabric(1, 1, 2, map[string]int64{"b0-r0-h0": 0})
	g.Take(a, perPod, map[string]int32{"b0-r0-h0": 1, "b0-r0-h1": 1})
	if got := g.Free(1)[gpu]; got != 8 {
		t.Errorf("with both pods bound, the second node has %d GPUs free, want its 8 (its pod is counted there already)", got)
	}
}

// TestStranded: with a gang of two whole nodes waiting for a rack, the
// GPUs of racks with room for one are stranded; a rack with room for two
// strands nothing.
func TestStranded(t *testing.T) {
	f := fabric(1, 3, 2, map[string]int64{"b0-r0-h0": 0, "b0-r0-h1": 6, "b0-r1-h0": 3})
	got := f.Stranded(Request{PerPod: resources.Requests{gpu: 8, corev1.ResourcePods: 1}, Count: 2, Level: 1, Required: true})
	if got[gpu] != 6+3+8 {
		t.Errorf("stranded %d GPUs, want %d (racks r0 and r1 hold one such pod at most)", got[gpu], 6+3+8)
	}
}
