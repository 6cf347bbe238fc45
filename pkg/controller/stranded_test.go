package controller

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/fabric"
	"github.com/berth-dev/berth/pkg/metrics"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestStrandedSampler: two racks of two 8-GPU nodes, one node of each
// half taken by another owner's pod; a gang of two whole nodes waits for
// a rack. Each rack has room for one such pod: all 8 free GPUs of each
// are stranded, 16 in all. Once the gang is gone, nothing is reported.
func TestStrandedSampler(t *testing.T) {
	tr := fabric.NewTracker(nil)
	tr.Observe(&berthv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "fabric"},
		Spec: berthv1alpha1.TopologySpec{Levels: []berthv1alpha1.TopologyLevel{{NodeLabel: "rack"}, {NodeLabel: "host"}}}})
	for r := range 2 {
		for h := range 2 {
			name := fmt.Sprintf("r%d-h%d", r, h)
			tr.Observe(&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": fmt.Sprint(r), "host": name}},
				Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
			})
		}
		tr.Observe(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("other-", r), Namespace: "ns", UID: types.UID(fmt.Sprint("uid-", r))},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("r%d-h0", r), Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			}}}},
		})
	}
	c, q := cache.New(), queue.NewManager()
	c.SetFabrics(tr)
	rf := utiltesting.MakeResourceFlavor("h100")
	rf.Spec.TopologyName = ptr.To[berthv1alpha1.TopologyReference]("fabric")
	c.AddOrUpdateResourceFlavor(rf)
	cq := utiltesting.MakeClusterQueue("q").ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "64").Obj()).Obj()
	c.AddOrUpdateClusterQueue(cq)
	q.AddOrUpdateClusterQueue(cq)
	gang := utiltesting.MakeWorkload("gang", "ns").Queue("q").PodSets(*utiltesting.MakePodSet("main", 2).Request("nvidia.com/gpu", "8").
		Annotation(berthv1alpha1.PodSetRequiredTopologyAnnotation, "rack").Obj()).Obj()
	if err := q.AddOrUpdateWorkload(gang, "q"); err != nil {
		t.Fatal(err)
	}
	s := &strandedSampler{cache: c, queues: q}
	s.sample()
	if got := testutil.ToFloat64(metrics.TopologyStrandedResources.WithLabelValues("h100", "rack", "nvidia.com/gpu")); got != 16 {
		t.Errorf("stranded GPUs = %v, want 16", got)
	}
	q.DeleteWorkload("ns/gang")
	s.sample()
	if n := testutil.CollectAndCount(metrics.TopologyStrandedResources); n != 0 {
		t.Errorf("%d series with no gang waiting, want none", n)
	}
}
