package workloadwriter

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
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// Apply writes the change when the version it was computed from is the
// latest, refuses a stale one, writes nothing when nothing changes, and
// leaves the object it was computed from, the cache's, alone.
func TestApply(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := utiltesting.MakeWorkload("a", "ns").Queue("main").Request(1, "cpu", "1").Obj()
	stored.Labels = map[string]string{"team": "a"}
	workload.SetCondition(stored, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, "Waiting for quota")
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&berthv1alpha1.Workload{}).WithObjects(stored).Build()
	w := NewUpdate(c)
	orig := &berthv1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), orig); err != nil {
		t.Fatal(err)
	}
	before := orig.DeepCopy()

	admitted, err := Apply(ctx, w, orig, func(wl *berthv1alpha1.Workload) bool {
		wl.Labels["team"] = "changed through the copy"
		return workload.Admit(utiltesting.MakeAdmission("cq").Obj())(wl)
	})
	if err != nil {
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

	if _, err := Apply(ctx, w, orig, workload.Evict(berthv1alpha1.ReasonPreempted, "stale")); !apierrors.IsConflict(err) {
		t.Errorf("a write from a stale version: %v, want a conflict", err)
	}
	same, err := Apply(ctx, w, got, workload.Admit(got.Status.Admission))
	if err != nil || same.ResourceVersion != got.ResourceVersion {
		t.Errorf("a change that changes nothing: resourceVersion %s, error %v; want %s and no write", same.ResourceVersion, err, got.ResourceVersion)
	}
}
