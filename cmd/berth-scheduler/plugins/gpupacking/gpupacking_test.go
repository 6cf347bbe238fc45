package gpupacking

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

// gpuPod makes a pod of Workload wl requesting gpus GPUs; wl may be empty.
func gpuPod(name, wl, gpus string) *corev1.Pod {
	p := st.MakePod().Name(name).Namespace("ns").UID(name)
	if gpus != "" {
		p = p.Req(map[corev1.ResourceName]string{GPUResource: gpus})
	}
	if wl != "" {
		p = p.Label(podset.WorkloadLabel, wl).Label(podset.PodSetLabel, "workers")
	}
	return p.Obj()
}

// gpuNodeInfo makes the snapshot's view of a node with gpus GPUs running pods.
func gpuNodeInfo(name, gpus string, pods ...*corev1.Pod) fwk.NodeInfo {
	capacity := map[corev1.ResourceName]string{corev1.ResourceCPU: "64"}
	if gpus != "" {
		capacity[GPUResource] = gpus
	}
	for _, p := range pods {
		p.Spec.NodeName = name
	}
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(st.MakeNode().Name(name).Capacity(capacity).Obj())
	return ni
}

func TestScore(t *testing.T) {
	cases := map[string]struct {
		pod    *corev1.Pod
		nodes  []fwk.NodeInfo
		want   map[string]int64
		winner string
	}{
		"a node already running the workload wins over fuller nodes": {
			pod: gpuPod("p", "train", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("same-workload", "8", gpuPod("t1", "train", "2")),
				gpuNodeInfo("almost-full", "8", gpuPod("o1", "other", "6")),
				gpuNodeInfo("empty", "8"),
			},
			// 50 + 50*3/8, 1 + 48*7/8, 1 + 48*1/8
			want:   map[string]int64{"same-workload": 68, "almost-full": 43, "empty": 7},
			winner: "same-workload",
		},
		"a half-full GPU node wins over an empty one": {
			pod: gpuPod("p", "train", "2"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("empty", "8"),
				gpuNodeInfo("half-full", "8", gpuPod("o1", "other", "4")),
			},
			want:   map[string]int64{"empty": 13, "half-full": 37},
			winner: "half-full",
		},
		"a node without room scores lowest": {
			pod: gpuPod("p", "train", "4"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("too-full", "8", gpuPod("t1", "train", "6")),
				gpuNodeInfo("no-gpu", ""),
				gpuNodeInfo("empty", "8"),
			},
			want:   map[string]int64{"too-full": 0, "no-gpu": 0, "empty": 25},
			winner: "empty",
		},
		"a pod of no workload is only packed": {
			pod: gpuPod("p", "", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("empty", "4"),
				gpuNodeInfo("used", "4", gpuPod("u", "", "2")),
			},
			want:   map[string]int64{"empty": 13, "used": 37},
			winner: "used",
		},
		"a workload in another namespace does not count": {
			pod: gpuPod("p", "train", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("elsewhere", "8", func() *corev1.Pod {
					p := gpuPod("x", "train", "1")
					p.Namespace = "other"
					return p
				}()),
			},
			want:   map[string]int64{"elsewhere": 13},
			winner: "elsewhere",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			pl := &GPUPacking{}
			state := framework.NewCycleState()
			if status := pl.PreScore(ctx, state, tc.pod, tc.nodes); !status.IsSuccess() {
				t.Fatalf("PreScore: %v", status)
			}
			got := map[string]int64{}
			winner, best := "", int64(-1)
			for _, ni := range tc.nodes {
				s, status := pl.Score(ctx, state, tc.pod, ni)
				if !status.IsSuccess() {
					t.Fatalf("Score on %s: %v", ni.Node().Name, status)
				}
				got[ni.Node().Name] = s
				if s > best {
					winner, best = ni.Node().Name, s
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Scores (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.winner, winner); diff != "" {
				t.Errorf("Best node (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreScoreSkipsPodsWithoutGPUs(t *testing.T) {
	cases := map[string]struct {
		pod      *corev1.Pod
		wantCode fwk.Code
	}{
		"no GPU request":    {pod: gpuPod("cpu", "train", ""), wantCode: fwk.Skip},
		"zero GPU request":  {pod: gpuPod("zero", "train", "0"), wantCode: fwk.Skip},
		"one GPU requested": {pod: gpuPod("gpu", "train", "1"), wantCode: fwk.Success},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pl := &GPUPacking{}
			status := pl.PreScore(t.Context(), framework.NewCycleState(), tc.pod, nil)
			if diff := cmp.Diff(tc.wantCode, status.Code()); diff != "" {
				t.Errorf("PreScore code (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreTiers(t *testing.T) {
	cases := map[string]struct {
		want int64
		node gpuNode
		gpus int64
	}{
		"no GPUs":                           {gpus: 1, node: gpuNode{}, want: fwk.MinScore},
		"not enough free":                   {gpus: 2, node: gpuNode{Allocatable: 8, Requested: 7}, want: fwk.MinScore},
		"fills another workload's node":     {gpus: 1, node: gpuNode{Allocatable: 8, Requested: 7}, want: otherMax},
		"lowest of its own workload":        {gpus: 1, node: gpuNode{Allocatable: 64, RunsWorkload: true}, want: workloadMin},
		"fills its own workload's node":     {gpus: 4, node: gpuNode{Allocatable: 8, Requested: 4, RunsWorkload: true}, want: workloadMax},
		"lowest elsewhere is above no room": {gpus: 1, node: gpuNode{Allocatable: 64}, want: otherMin},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, score(tc.gpus, tc.node)); diff != "" {
				t.Errorf("score() (-want +got):\n%s", diff)
			}
		})
	}
}
