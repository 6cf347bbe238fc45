package applier

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

func TestWaitReasons(t *testing.T) {
	cases := map[string]struct {
		wl *berthv1alpha1.Workload
		// assumed is whether the scheduler holds quota for it.
		assumed bool
		want    string
	}{
		"a waiting workload gets the message": {
			wl:   utiltesting.MakeWorkload("w", "ns").Obj(),
			want: "False: needs 4 cpu, 2 available",
		},
		"nothing is written over an admission not seen yet": {
			wl:      utiltesting.MakeWorkload("w", "ns").Obj(),
			assumed: true,
			want:    "",
		},
		"a late message never undoes an admission": {
			wl:   utiltesting.MakeWorkload("w", "ns").AdmittedIn("cq", "f").Obj(),
			want: "True: ",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := berthv1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.wl).WithStatusSubresource(tc.wl).Build()
			w := NewWaitReasons(c, workloadwriter.NewUpdate(c), func(string) bool { return tc.assumed })
			stale := tc.wl.DeepCopy()
			stale.Status = berthv1alpha1.WorkloadStatus{}
			w.Set(stale, berthv1alpha1.ReasonPending, "needs 4 cpu, 2 available")
			if err := w.write(context.Background(), client.ObjectKeyFromObject(tc.wl)); err != nil {
				t.Fatal(err)
			}
			got := &berthv1alpha1.Workload{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.wl), got); err != nil {
				t.Fatal(err)
			}
			var status string
			if cond := workload.FindCondition(got, berthv1alpha1.WorkloadQuotaReserved); cond != nil {
				status = string(cond.Status) + ": " + cond.Message
			}
			if diff := cmp.Diff(tc.want, status); diff != "" {
				t.Errorf("QuotaReserved (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitReasonsBehind: a workload set aside behind the head of its
// shape is told so, with the head's numbers.
func TestWaitReasonsBehind(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	head := utiltesting.MakeWorkload("head", "ns").Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
	head.Status.Conditions[0].Message = "needs 8 cpu, 2 available"
	behind := utiltesting.MakeWorkload("behind", "ns").Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(head, behind).WithStatusSubresource(head, behind).Build()
	w := NewWaitReasons(c, workloadwriter.NewUpdate(c), func(string) bool { return false })
	w.SetBehind(behind, head, false)
	if err := w.write(context.Background(), client.ObjectKeyFromObject(behind)); err != nil {
		t.Fatal(err)
	}
	got := &berthv1alpha1.Workload{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(behind), got); err != nil {
		t.Fatal(err)
	}
	want := "Waiting behind workload ns/head, which needs as much quota, has no lower priority and does not fit: needs 8 cpu, 2 available"
	if cond := workload.FindCondition(got, berthv1alpha1.WorkloadQuotaReserved); cond == nil || cond.Message != want {
		t.Errorf("QuotaReserved = %+v, want the message %q", cond, want)
	}
}
