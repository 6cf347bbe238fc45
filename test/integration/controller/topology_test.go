package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

const (
	blockKey = "cloud.berth.dev/block"
	rackKey  = "cloud.berth.dev/rack"
	hostKey  = "kubernetes.io/hostname"
	gpuName  = corev1.ResourceName("nvidia.com/gpu")
)

// gpuJob is a Job of n pods of 8 GPUs whose pod template carries the
// annotations.
func gpuJob(name, ns string, n int32, annotations map[string]string) *batchv1.Job {
	job := utiltesting.MakeJob(name, ns).Queue("main").Parallelism(n).Obj()
	eight := resource.MustParse("8")
	job.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{gpuName: eight}, Limits: corev1.ResourceList{gpuName: eight},
	}
	job.Spec.Template.Annotations = annotations
	return job
}

// TestTopologyConfinesAGangToOneRack runs a flavor with a Topology over
// two racks of two nodes of 8 GPUs, created in the API server, Ready; the
// test binds a pod of another owner to a node, as a scheduler would. The
// quota (64 GPUs) is never the limit: the nodes are.
func TestTopologyConfinesAGangToOneRack(t *testing.T) {
	flavor, topo := unique("fabric"), unique("fabric-topology")
	racks := []string{unique("rack"), unique("rack")}
	mustCreate(t, &berthv1alpha1.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: topo},
		Spec:       berthv1alpha1.TopologySpec{Levels: []berthv1alpha1.TopologyLevel{{NodeLabel: blockKey}, {NodeLabel: rackKey}, {NodeLabel: hostKey}}},
	})
	var nodes []*corev1.Node
	for _, rack := range racks {
		for h := range 2 {
			name := fmt.Sprintf("%s-h%d", rack, h)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"pool": flavor, blockKey: "b1", rackKey: rack, hostKey: name,
			}}}
			mustCreate(t, node)
			node.Status.Allocatable = corev1.ResourceList{gpuName: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}
			node.Status.Capacity = node.Status.Allocatable
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Test", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			if err := server.Client.Status().Update(ctxFor(t), node); err != nil {
				t.Fatal(err)
			}
			// The API server taints a new node not-ready; the node
			// lifecycle controller, which does not run here, lifts it.
			node.Spec.Taints = nil
			if err := server.Client.Update(ctxFor(t), node); err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, node)
			t.Cleanup(func() { _ = server.Client.Delete(context.Background(), node) })
		}
	}
	rf := utiltesting.MakeResourceFlavor(flavor)
	rf.Spec.NodeLabels = map[string]string{"pool": flavor}
	rf.Spec.TopologyName = ptr.To(berthv1alpha1.TopologyReference(topo))
	cq := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).Resource(string(gpuName), "64").Obj())
	ns := namespace(t, nil)
	mustCreate(t, rf, cq.Obj(), utiltesting.MakeLocalQueue("main", ns, cq.Name))
	dumpOnFailure(t, ns)

	// Another owner's pod holds all of the first rack's first node.
	other := utiltesting.MakePod("other-owner", ns).Obj()
	other.Spec.NodeName = nodes[0].Name
	other.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{gpuName: resource.MustParse("8")}, Limits: corev1.ResourceList{gpuName: resource.MustParse("8")},
	}
	mustCreate(t, other)

	rackOf := func(wl *berthv1alpha1.Workload) error {
		ta := wl.Status.Admission.PodSetAssignments[0].TopologyAssignment
		if ta == nil {
			return errorf("admitted without a topology assignment")
		}
		return nil
	}
	required := map[string]string{berthv1alpha1.PodSetRequiredTopologyAnnotation: rackKey}
	first := gpuJob("first", ns, 2, required)
	mustCreate(t, first)
	wl := workloadOf(t, first, "admitted in the second rack", func(wl *berthv1alpha1.Workload) error {
		if err := admitted(wl); err != nil {
			return err
		}
		return rackOf(wl)
	})
	want := &berthv1alpha1.TopologyAssignment{Levels: []string{blockKey, rackKey, hostKey}, Domains: []berthv1alpha1.TopologyDomainAssignment{
		{Values: []string{"b1", racks[1], nodes[2].Name}, Count: 1}, {Values: []string{"b1", racks[1], nodes[3].Name}, Count: 1},
	}}
	if diff := cmp.Diff(want, wl.Status.Admission.PodSetAssignments[0].TopologyAssignment); diff != "" {
		t.Errorf("topology assignment (-want +got):\n%s", diff)
	}
	running := jobState(t, first, false)
	if diff := cmp.Diff(map[string]string{"pool": flavor, blockKey: "b1", rackKey: racks[1]}, running.Spec.Template.Spec.NodeSelector); diff != "" {
		t.Errorf("the running Job's node selector (-want +got):\n%s", diff)
	}

	// Its pods are not bound yet (no scheduler runs here): the second rack
	// stays its own, and the first has room for one pod only.
	second := gpuJob("second", ns, 2, required)
	mustCreate(t, second)
	workloadOf(t, second, "waiting for a rack, in numbers", pendingWith(
		"needs 2 pods (nvidia.com/gpu: 8 each pod) in one cloud.berth.dev/rack: the best, b1/"+racks[0]+", has room for 1; 1 other for 0"))

	// The other owner's pod ends: the first rack has room, and the second
	// gang is admitted there without any change to Berth's objects.
	if err := server.Client.Delete(ctxFor(t), other, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	wl = workloadOf(t, second, "admitted in the first rack", admitted)
	if got := wl.Status.Admission.PodSetAssignments[0].TopologyAssignment; got == nil || got.Domains[0].Values[1] != racks[0] {
		t.Errorf("the second gang's assignment is %+v, want the first rack", got)
	}

	// Annotations that cannot be honoured are refused, naming the field.
	bad := gpuJob("bad", ns, 2, map[string]string{berthv1alpha1.PodSetSliceSizeAnnotation: "2"})
	err := server.Client.Create(ctxFor(t), bad)
	if !apierrors.IsInvalid(err) || !contains(err.Error(), "spec.template.metadata.annotations") || !contains(err.Error(), "go together") {
		t.Errorf("creating a Job with a slice size and no slice level: %v, want it refused naming spec.template.metadata.annotations", err)
	}
}
