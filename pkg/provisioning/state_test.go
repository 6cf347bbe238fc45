package provisioning

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
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
			wl := utiltesting.MakeWorkload("wl", "ns").Request(1, "nvidia.com/gpu", "8").Obj()
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
