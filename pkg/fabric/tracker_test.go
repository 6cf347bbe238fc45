package fabric

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
)

const gpu = corev1.ResourceName("nvidia.com/gpu")

func gpuNode(name, rack string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "h100", "rack": rack, "host": name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{gpu: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
		},
	}
}

func gpuPod(name, node, workload string, gpus string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{gpu: resource.MustParse(gpus)}, Limits: corev1.ResourceList{gpu: resource.MustParse(gpus)},
		}}}},
	}
	if workload != "" {
		p.Labels = map[string]string{berthv1alpha1.WorkloadLabel: workload}
	}
	return p
}

// room is how many pods of 8 GPUs each node of the flavor's fabric takes,
// in one rack or anywhere.
func room(t *testing.T, tr *Tracker, rf *berthv1alpha1.ResourceFlavor, count int32) string {
	t.Helper()
	f := tr.Fabric(rf)
	if f == nil {
		return "no fabric"
	}
	a, m := f.Find(topology.Request{PerPod: resources.Requests{gpu: 8, corev1.ResourcePods: 1}, Count: count, Level: -1})
	if m != nil {
		return m.String()
	}
	out := ""
	for _, d := range a.Domains {
		out += d.Values[len(d.Values)-1] + " "
	}
	return out
}

func TestTrackerCountsBoundPodsOfEveryOwner(t *testing.T) {
	tr := NewTracker(nil)
	rf := &berthv1alpha1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "h100"},
		Spec: berthv1alpha1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "h100"}, TopologyName: ptr.To[berthv1alpha1.TopologyReference]("fabric")}}
	if got := room(t, tr, rf, 1); got != "no fabric" {
		t.Errorf("without its Topology: %s", got)
	}
	tr.topology(&berthv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "fabric"},
		Spec: berthv1alpha1.TopologySpec{Levels: []berthv1alpha1.TopologyLevel{{NodeLabel: "rack"}, {NodeLabel: "host"}}}}, false)
	// A pod seen before its node is counted when the node comes.
	tr.pod(gpuPod("early", "n1", "", "4"), false)
	tr.node(gpuNode("n1", "r1", corev1.ConditionTrue), false)
	tr.node(gpuNode("n2", "r1", corev1.ConditionTrue), false)
	tr.node(gpuNode("n3", "r2", corev1.ConditionFalse), false)
	if got := room(t, tr, rf, 2); got != "needs 2 pods (nvidia.com/gpu: 8 each pod) on the flavor's nodes: they have room for 1" {
		t.Errorf("with 4 GPUs taken on n1 and n3 not ready: %s", got)
	}
	tr.pod(gpuPod("early", "n1", "", "4"), true)
	if got := room(t, tr, rf, 2); got != "n1 n2 " {
		t.Errorf("once the pod is gone: %s", got)
	}
	tr.pod(gpuPod("mine", "n2", "job-a", "8"), false)
	if got := tr.Bound("ns/job-a"); got["n2"] != 1 {
		t.Errorf("Bound = %v, want one pod on n2", got)
	}
	done := gpuPod("mine", "n2", "job-a", "8")
	done.Status.Phase = corev1.PodSucceeded
	tr.pod(done, false)
	if got := tr.Bound("ns/job-a"); len(got) != 0 {
		t.Errorf("Bound after the pod succeeded = %v, want none", got)
	}
	if got := room(t, tr, rf, 2); got != "n1 n2 " {
		t.Errorf("once the pod succeeded: %s", got)
	}
}
