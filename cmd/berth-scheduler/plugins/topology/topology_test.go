package topology

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

const (
	rackLabel = "cloud.berth.dev/rack"
	hostLabel = "kubernetes.io/hostname"
)

// twoRacks is rack r0 with hosts h0 and h1 and rack r1 with h2 and h3, and
// h9 outside any rack.
func twoRacks() []*corev1.Node {
	node := func(name, rack string) *corev1.Node {
		n := st.MakeNode().Name(name).Label(hostLabel, name).Obj()
		if rack != "" {
			n.Labels[rackLabel] = rack
		}
		return n
	}
	return []*corev1.Node{node("h0", "r0"), node("h1", "r0"), node("h2", "r1"), node("h3", "r1"), node("h9", "")}
}

// byHost is an assignment at the host level: h0 takes 2 pods, h2 1.
const byHost = `{"levels":["cloud.berth.dev/rack","kubernetes.io/hostname"],"domains":[` +
	`{"values":["r0","h0"],"count":2},{"values":["r1","h2"],"count":1}]}`

// byRack is an assignment at the rack level: r0 takes 1 pod, r1 2.
const byRack = `{"levels":["cloud.berth.dev/rack"],"domains":[{"values":["r0"],"count":1},{"values":["r1"],"count":2}]}`

func gangPod(name, assignment string) *st.PodWrapper {
	p := st.MakePod().Name(name).Namespace("ns").UID(name).
		Label(podset.WorkloadLabel, "train").Label(podset.PodSetLabel, "workers")
	if assignment != "" {
		p = p.Annotation(podset.TopologyAssignmentAnnotation, assignment)
	}
	return p
}

func TestPreFilter(t *testing.T) {
	cases := map[string]struct {
		pod *corev1.Pod
		// running are pods on nodes, by node name.
		running   map[string][]*corev1.Pod
		wantCode  fwk.Code
		wantNodes []string
		wantMsg   string
	}{
		"a pod without the annotation skips": {
			pod:      gangPod("p", "").Obj(),
			wantCode: fwk.Skip,
		},
		"the first pod may go to any host of the assignment": {
			pod:       gangPod("p", byHost).Obj(),
			wantNodes: []string{"h0", "h2"},
		},
		"a host that holds its count is closed": {
			pod: gangPod("p", byHost).Obj(),
			running: map[string][]*corev1.Pod{
				"h0": {gangPod("a", byHost).Node("h0").Obj(), gangPod("b", byHost).Node("h0").Obj()},
			},
			wantNodes: []string{"h2"},
		},
		"finished pods and other gangs' pods leave room": {
			pod: gangPod("p", byHost).Obj(),
			running: map[string][]*corev1.Pod{
				"h0": {gangPod("a", byHost).Node("h0").Phase(corev1.PodSucceeded).Obj(),
					st.MakePod().Name("other").Namespace("ns").UID("other").Label(podset.WorkloadLabel, "other").Label(podset.PodSetLabel, "workers").Node("h0").Obj()},
				"h2": {gangPod("c", byHost).Node("h2").Obj()},
			},
			wantNodes: []string{"h0"},
		},
		"the pod itself, assumed on a node, does not count": {
			pod: gangPod("p", byHost).Obj(),
			running: map[string][]*corev1.Pod{
				"h2": {gangPod("p", byHost).Node("h2").Obj()},
			},
			wantNodes: []string{"h0", "h2"},
		},
		"a rack domain takes every host of the rack": {
			pod: gangPod("p", byRack).Obj(),
			running: map[string][]*corev1.Pod{
				"h1": {gangPod("a", byRack).Node("h1").Obj()},
			},
			wantNodes: []string{"h2", "h3"},
		},
		"every domain full": {
			pod: gangPod("p", byRack).Obj(),
			running: map[string][]*corev1.Pod{
				"h0": {gangPod("a", byRack).Node("h0").Obj()},
				"h2": {gangPod("b", byRack).Node("h2").Obj()},
				"h3": {gangPod("c", byRack).Node("h3").Obj()},
			},
			wantCode: fwk.UnschedulableAndUnresolvable,
			wantMsg:  "the 2 domains of podset ns/train/workers's topology assignment hold their 3 pods",
		},
		"an assignment that does not parse": {
			pod:      gangPod("p", `{"levels":["cloud.berth.dev/rack"],"domains":[{"values":["r0","h0"],"count":1}]}`).Obj(),
			wantCode: fwk.UnschedulableAndUnresolvable,
			wantMsg:  "domain 0 has 2 values for 1 levels",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var nodes []fwk.NodeInfo
			for _, n := range twoRacks() {
				ni := framework.NewNodeInfo(tc.running[n.Name]...)
				ni.SetNode(n)
				nodes = append(nodes, ni)
			}
			res, status := (&Topology{}).PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nodes)
			if got := status.Code(); got != tc.wantCode {
				t.Fatalf("code %v (%s), want %v", got, status.Message(), tc.wantCode)
			}
			if !strings.Contains(status.Message(), tc.wantMsg) {
				t.Errorf("message %q, want it to hold %q", status.Message(), tc.wantMsg)
			}
			var got []string
			if res != nil {
				got = sets.List(res.NodeNames)
			}
			if diff := cmp.Diff(tc.wantNodes, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkPreFilter is the plugin's cost for one pod of a gang of 512 on
// 4,096 nodes (16 blocks of 32 racks of 8 hosts), half the gang placed,
// its assignment a host each: what the scheduler pays per pod of a podset
// placed on a Topology, against the nodes it would filter anyway.
func BenchmarkPreFilter(b *testing.B) {
	const blocks, racks, hosts, gang = 16, 32, 8, 512
	var nodes []fwk.NodeInfo
	var domains []string
	for bl := range blocks {
		for r := range racks {
			for h := range hosts {
				name := fmt.Sprintf("b%d-r%d-h%d", bl, r, h)
				n := st.MakeNode().Name(name).Label("block", fmt.Sprintf("b%d", bl)).Label(rackLabel, fmt.Sprintf("b%d-r%d", bl, r)).Label(hostLabel, name).Obj()
				var pods []*corev1.Pod
				if len(domains) < gang {
					domains = append(domains, fmt.Sprintf(`{"values":["b%d","b%d-r%d",%q],"count":1}`, bl, bl, r, name))
					if len(domains) <= gang/2 {
						pods = append(pods, gangPod(name+"-pod", "").Node(name).Obj())
					}
				}
				// Other work on every node, as on a busy cluster.
				for i := range 4 {
					pods = append(pods, st.MakePod().Name(fmt.Sprintf("%s-other-%d", name, i)).Namespace("other").UID(fmt.Sprintf("%s-other-%d", name, i)).Node(name).Obj())
				}
				ni := framework.NewNodeInfo(pods...)
				ni.SetNode(n)
				nodes = append(nodes, ni)
			}
		}
	}
	assignment := `{"levels":["block","cloud.berth.dev/rack","kubernetes.io/hostname"],"domains":[` + strings.Join(domains, ",") + `]}`
	pod := gangPod("p", assignment).Obj()
	plugin := &Topology{}
	b.ResetTimer()
	for b.Loop() {
		res, status := plugin.PreFilter(context.Background(), framework.NewCycleState(), pod, nodes)
		if !status.IsSuccess() || res.NodeNames.Len() != gang/2 {
			b.Fatalf("status %v, %d nodes", status, res.NodeNames.Len())
		}
	}
}
