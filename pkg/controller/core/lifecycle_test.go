package core

import (
	"encoding/json"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/pkg/workload"
)

// TestStatusPatchAppliesAsTheGenericDifference applies statusPatch and
// controller-runtime's merge difference to the same stored Workload: the
// results must be the same object.
func TestStatusPatchAppliesAsTheGenericDifference(t *testing.T) {
	pending := utiltesting.MakeWorkload("a", "ns").Queue("main").Request(1, "cpu", "1").Obj()
	pending.ResourceVersion = "7"
	workload.SetCondition(pending, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, "Waiting for quota")
	admitted := pending.DeepCopy()
	admitted.Status.Admission = utiltesting.MakeAdmission("cq").Obj()
	workload.SetCondition(admitted, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, "Quota reserved in ClusterQueue cq")
	workload.SetCondition(admitted, berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "Admitted by ClusterQueue cq")
	requeued := pending.DeepCopy()
	requeued.Status.RequeueState = &berthv1alpha1.RequeueState{Count: ptr.To[int32](1)}
	requeuedTwice := requeued.DeepCopy()
	requeuedTwice.Status.RequeueState = &berthv1alpha1.RequeueState{Count: ptr.To[int32](2), RequeueAt: &metav1.Time{Time: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}}
	readmitted := admitted.DeepCopy()
	readmitted.Status.Admission = utiltesting.MakeAdmission("other").Obj()
	bare := pending.DeepCopy()
	bare.Status = berthv1alpha1.WorkloadStatus{}

	cases := map[string]struct{ from, to *berthv1alpha1.Workload }{
		"admitted":                   {pending, admitted},
		"admission taken away":       {admitted, pending},
		"requeue state appears":      {pending, requeued},
		"requeue state changes":      {requeued, requeuedTwice},
		"requeue state goes":         {requeuedTwice, pending},
		"requeue time goes":          {requeuedTwice, requeued},
		"admission changes in place": {admitted, readmitted},
		"conditions all go":          {pending, bare},
		"nothing changes":            {admitted, admitted},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stored, err := json.Marshal(tc.from)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := statusPatch(tc.from.ResourceVersion, &tc.from.Status, &tc.to.Status)
			if err != nil {
				t.Fatal(err)
			}
			generic, err := client.MergeFromWithOptions(
				&berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{ResourceVersion: tc.from.ResourceVersion}, Status: tc.from.Status},
				client.MergeFromWithOptimisticLock{},
			).Data(&berthv1alpha1.Workload{Status: tc.to.Status})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(apply(t, stored, generic), apply(t, stored, ours)); diff != "" {
				t.Errorf("statusPatch %s applies differently from the generic %s (-generic +ours):\n%s", ours, generic, diff)
			}
			// Through JSON, as the API server stores it: times in seconds.
			want, err := json.Marshal(tc.to)
			if err != nil {
				t.Fatal(err)
			}
			wantWl := &berthv1alpha1.Workload{}
			if err := json.Unmarshal(want, wantWl); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantWl.Status, apply(t, stored, ours).Status); diff != "" {
				t.Errorf("the patched status is not the wanted one (-want +got):\n%s", diff)
			}
		})
	}
}

func apply(t *testing.T, stored, patch []byte) *berthv1alpha1.Workload {
	t.Helper()
	if !json.Valid(patch) {
		t.Fatalf("patch is not JSON: %s", patch)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil || p.Metadata.ResourceVersion == "" {
		t.Fatalf("patch %s carries no resourceVersion (err %v)", patch, err)
	}
	out, err := jsonpatch.MergePatch(stored, patch)
	if err != nil {
		t.Fatal(err)
	}
	wl := &berthv1alpha1.Workload{}
	if err := json.Unmarshal(out, wl); err != nil {
		t.Fatal(err)
	}
	return wl
}
