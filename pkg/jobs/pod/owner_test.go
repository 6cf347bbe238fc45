package pod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// The tests of owned groups use a stand-in for the GroupOwner that
// pkg/jobs/statefulset registers, which they cannot import: its
// StatefulSets want 3 pods, and one named "gone" does not exist.
func init() {
	RegisterGroupOwner(GroupOwner{APIVersion: "apps/v1", Kind: "StatefulSet",
		Size: func(_ context.Context, _ client.Reader, _ string, ref metav1.OwnerReference) (int32, error) {
			if ref.Name == "gone" {
				return 0, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, ref.Name)
			}
			return 3, nil
		}})
}

func TestLoadGroupAsksItsOwnerForItsSize(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		owner       string
		wantTotal   int32
		wantInvalid string
	}{
		"the owner exists":  {owner: "s", wantTotal: 3},
		"the owner is gone": {owner: "gone", wantInvalid: "its StatefulSet gone is gone"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := utiltesting.MakePod(tc.owner+"-0", "ns").Queue("q").Label(berthv1alpha1.PodGroupNameLabel, "g").OwnedBy("apps/v1", "StatefulSet", tc.owner, "uid").Obj()
			job, err := loadGroup(t.Context(), fake.NewClientBuilder().WithScheme(scheme).WithObjects(p).Build(), "ns", "g")
			if err != nil {
				t.Fatal(err)
			}
			g := job.(*Group)
			if g.total != tc.wantTotal || g.invalid != tc.wantInvalid {
				t.Errorf("total %d, invalid %q; want %d, %q", g.total, g.invalid, tc.wantTotal, tc.wantInvalid)
			}
		})
	}
}
