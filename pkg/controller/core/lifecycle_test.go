package core

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/pkg/workload"
)

// A status write replaces the status when the version it was computed
// from is the latest, refuses a stale one, and leaves the object it was
// computed from, the cache's, alone.
func TestWriteWorkloadStatus(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := utiltesting.MakeWorkload("a", "ns").Queue("main").Request(1, "cpu", "1").Obj()
	workload.SetCondition(stored, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, "Waiting for quota")
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&berthv1alpha1.Workload{}).WithObjects(stored).Build()
	orig := &berthv1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), orig); err != nil {
		t.Fatal(err)
	}
	before := orig.DeepCopy()

	admitted := statusCopy(orig)
	admitted.Status.Admission = utiltesting.MakeAdmission("cq").Obj()
	workload.SetCondition(admitted, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, "Quota reserved in ClusterQueue cq")
	if err := writeWorkloadStatus(ctx, c, admitted); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, orig); diff != "" {
		t.Errorf("the object written from changed (-before +after):\n%s", diff)
	}
	got := &berthv1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if admitted.ResourceVersion != got.ResourceVersion || got.ResourceVersion == orig.ResourceVersion {
		t.Errorf("resourceVersion %s after the write, stored %s, before %s: want the new one", admitted.ResourceVersion, got.ResourceVersion, orig.ResourceVersion)
	}
	if got.Status.Admission == nil || !workload.HasQuotaReservation(got) {
		t.Errorf("stored status %+v, want the admission", got.Status)
	}

	evicted := statusCopy(orig)
	workload.SetCondition(evicted, berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, "stale")
	if err := writeWorkloadStatus(ctx, c, evicted); !apierrors.IsConflict(err) {
		t.Errorf("a write from a stale version: %v, want a conflict", err)
	}
}
