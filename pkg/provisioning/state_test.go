package provisioning

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestCheckState maps each condition of a ProvisioningRequest to the state
// of the check, as the package doc says.
func TestCheckState(t *testing.T) {
	cfg := &berthv1alpha1.ProvisioningRequestConfig{Spec: berthv1alpha1.ProvisioningRequestConfigSpec{
		RetryStrategy: &berthv1alpha1.ProvisioningRequestRetryStrategy{BackoffLimitCount: ptr.To[int32](2), BackoffBaseSeconds: ptr.To[int32](10), BackoffMaxSeconds: ptr.To[int32](15)},
	}}
	cases := map[string]struct {
		conditions []string
		// failed counts the workload's failed requests, this one included.
		failed   int
		admitted bool
		// ready is set when the check was Ready before.
		ready bool
		// wantNil is set when the check must stay as it is.
		wantNil  bool
		want     berthv1alpha1.CheckState
		wantWait int32
	}{
		"made":                                {want: berthv1alpha1.CheckStatePending},
		"accepted":                            {conditions: []string{autoscalingv1.Accepted}, want: berthv1alpha1.CheckStatePending},
		"provisioned":                         {conditions: []string{autoscalingv1.Accepted, autoscalingv1.Provisioned}, want: berthv1alpha1.CheckStateReady},
		"failed first: retry after the base":  {conditions: []string{autoscalingv1.Failed}, failed: 1, want: berthv1alpha1.CheckStateRetry, wantWait: 10},
		"failed second: retry, capped wait":   {conditions: []string{autoscalingv1.Failed}, failed: 2, want: berthv1alpha1.CheckStateRetry, wantWait: 15},
		"failed past the limit: rejected":     {conditions: []string{autoscalingv1.Failed}, failed: 3, want: berthv1alpha1.CheckStateRejected},
		"capacity revoked while running":      {conditions: []string{autoscalingv1.Provisioned, autoscalingv1.CapacityRevoked}, admitted: true, want: berthv1alpha1.CheckStateRetry},
		"booking expired before admission":    {conditions: []string{autoscalingv1.Provisioned, autoscalingv1.BookingExpired}, want: berthv1alpha1.CheckStateRetry},
		"booking expired once admitted stays": {conditions: []string{autoscalingv1.Provisioned, autoscalingv1.BookingExpired}, admitted: true, want: berthv1alpha1.CheckStateReady},
		"ready stays ready while accepted":    {conditions: []string{autoscalingv1.Accepted}, ready: true, wantNil: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := utiltesting.MakeWorkload("wl", "ns").Request(1, "nvidia.com/gpu", "8").AdmittedIn("cq", "h100").Obj()
			wl.Status.Conditions = nil
			if tc.admitted {
				wl.Status.Conditions = []metav1.Condition{{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue}}
			}
			if tc.ready {
				wl.Status.AdmissionChecks = []berthv1alpha1.AdmissionCheckState{{Name: "cloud", State: berthv1alpha1.CheckStateReady}}
			}
			pr := &autoscalingv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Name: "wl-cloud-9", Namespace: "ns"}}
			for _, c := range tc.conditions {
				meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, Message: "the autoscaler says " + c})
			}
			st := checkState(wl, "cloud", pr, cfg, tc.failed)
			if tc.wantNil {
				if st != nil {
					t.Errorf("state %s (%s), want the check left as it is", st.State, st.Message)
				}
				return
			}
			if st == nil {
				t.Fatal("no state")
			}
			if diff := cmp.Diff(tc.want, st.State); diff != "" {
				t.Errorf("state (-want +got):\n%s\n%s", diff, st.Message)
			}
			if diff := cmp.Diff(tc.wantWait, ptr.Deref(st.RequeueAfterSeconds, 0)); diff != "" {
				t.Errorf("wait (-want +got):\n%s", diff)
			}
			if tc.want == berthv1alpha1.CheckStateReady && st.PodSetUpdates[0].Annotations[autoscalingv1.ConsumesAnnotation] != pr.Name {
				t.Errorf("pod set updates %v, want the pods to consume %s", st.PodSetUpdates, pr.Name)
			}
		})
	}
}

// TestManagedResourcesAndMerging: a request asks nodes only for the podsets
// that ask for a managed resource, merges alike podsets under the merge
// policy, and once provisioned gives those podsets' pods the class's
// details as node labels; a workload with no such podset needs no request.
func TestManagedResourcesAndMerging(t *testing.T) {
	gpu := func(name string, count int32) *utiltesting.PodSetWrapper {
		return utiltesting.MakePodSet(name, count).Request("nvidia.com/gpu", "8")
	}
	wl := utiltesting.MakeWorkload("wl", "ns").PodSets(
		*utiltesting.MakePodSet("driver", 1).Request("cpu", "1").Obj(),
		*gpu("workers-a", 2).Obj(), *gpu("workers-b", 3).Obj(),
	).AdmittedIn("cq", "h100").Obj()
	policy := berthv1alpha1.IdenticalWorkloadSchedulingRequirements
	cfg := &berthv1alpha1.ProvisioningRequestConfig{Spec: berthv1alpha1.ProvisioningRequestConfigSpec{
		ManagedResources:  []corev1.ResourceName{"nvidia.com/gpu"},
		PodSetMergePolicy: &policy,
		PodSetUpdates: &berthv1alpha1.ProvisioningRequestPodSetUpdates{NodeSelector: []berthv1alpha1.ProvisioningRequestPodSetUpdatesNodeSelector{
			{Key: "cloud.example/reservation", ValueFromProvisioningClassDetail: "reservationName"},
			{Key: "cloud.example/absent", ValueFromProvisioningClassDetail: "notThere"},
		}},
	}}
	if diff := cmp.Diff([]string{"workers-a", "workers-b"}, requested(wl, cfg)); diff != "" {
		t.Errorf("requested podsets (-want +got):\n%s", diff)
	}
	infos := []jobframework.PodSetInfo{{Name: "driver", Count: 1}, {Name: "workers-a", Count: 2}, {Name: "workers-b", Count: 3}}
	got := requestPodSets(wl, infos, cfg, nil)
	if len(got) != 1 || got[0].count != 5 || !slices.Equal(got[0].podSets, []string{"workers-a", "workers-b"}) {
		t.Errorf("request podsets %+v, want the two worker podsets merged, 5 pods", got)
	}
	cfg.Spec.PodSetMergePolicy = nil
	if got := requestPodSets(wl, infos, cfg, nil); len(got) != 2 {
		t.Errorf("request podsets without a merge policy: %d, want 2", len(got))
	}

	pr := &autoscalingv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Name: "wl-cloud-1"}}
	pr.Status.ProvisioningClassDetails = map[string]autoscalingv1.Detail{"reservationName": "r-42"}
	meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: autoscalingv1.Provisioned, Status: metav1.ConditionTrue, Reason: "Provisioned"})
	st := checkState(wl, "cloud", pr, cfg, 0)
	if len(st.PodSetUpdates) != 2 || st.PodSetUpdates[0].Name != "workers-a" ||
		!maps.Equal(st.PodSetUpdates[1].NodeSelector, map[string]string{"cloud.example/reservation": "r-42"}) {
		t.Errorf("pod set updates %+v, want the workers only, with the reservation's node label", st.PodSetUpdates)
	}

	cpuOnly := utiltesting.MakeWorkload("cpu", "ns").Request(1, "cpu", "1").AdmittedIn("cq", "h100").Obj()
	if got := requested(cpuOnly, cfg); len(got) != 0 {
		t.Errorf("requested podsets of a CPU-only workload: %v, want none", got)
	}
}
