package provisioning

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestStateOfARequest maps each condition of a ProvisioningRequest to the
// state of the check, as the package doc says.
func TestStateOfARequest(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{autoscalingv1.AddToScheme, berthv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &berthv1alpha1.ProvisioningRequestConfig{Spec: berthv1alpha1.ProvisioningRequestConfigSpec{
		RetryStrategy: &berthv1alpha1.ProvisioningRequestRetryStrategy{BackoffLimitCount: ptr.To[int32](2), BackoffBaseSeconds: ptr.To[int32](10), BackoffMaxSeconds: ptr.To[int32](15)},
	}}
	cases := map[string]struct {
		conditions []string
		// earlierFailures are failed requests of the same workload before.
		earlierFailures int
		admitted        bool
		want            berthv1alpha1.CheckState
		wantWait        int32
	}{
		"made":                                {want: berthv1alpha1.CheckStatePending},
		"accepted":                            {conditions: []string{autoscalingv1.Accepted}, want: berthv1alpha1.CheckStatePending},
		"provisioned":                         {conditions: []string{autoscalingv1.Accepted, autoscalingv1.Provisioned}, want: berthv1alpha1.CheckStateReady},
		"failed first: retry after the base":  {conditions: []string{autoscalingv1.Failed}, want: berthv1alpha1.CheckStateRetry, wantWait: 10},
		"failed second: retry, capped wait":   {conditions: []string{autoscalingv1.Failed}, earlierFailures: 1, want: berthv1alpha1.CheckStateRetry, wantWait: 15},
		"failed past the limit: rejected":     {conditions: []string{autoscalingv1.Failed}, earlierFailures: 2, want: berthv1alpha1.CheckStateRejected},
		"capacity revoked while running":      {conditions: []string{autoscalingv1.Provisioned, autoscalingv1.CapacityRevoked}, admitted: true, want: berthv1alpha1.CheckStateRetry},
		"booking expired before admission":    {conditions: []string{autoscalingv1.Provisioned, autoscalingv1.BookingExpired}, want: berthv1alpha1.CheckStateRetry},
		"booking expired once admitted stays": {conditions: []string{autoscalingv1.Provisioned, autoscalingv1.BookingExpired}, admitted: true, want: berthv1alpha1.CheckStateReady},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := utiltesting.MakeWorkload("wl", "ns").Request(1, "nvidia.com/gpu", "8").Obj()
			if tc.admitted {
				wl.Status.Conditions = []metav1.Condition{{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue}}
			}
			request := func(name string, conds ...string) *autoscalingv1.ProvisioningRequest {
				pr := &autoscalingv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{WorkloadLabel: "wl", CheckLabel: "cloud"}}}
				for _, c := range conds {
					meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, Message: "the autoscaler says " + c})
				}
				return pr
			}
			pr := request("wl-cloud-9", tc.conditions...)
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pr)
			for i := range tc.earlierFailures {
				b.WithObjects(request("wl-cloud-"+string(rune('1'+i)), autoscalingv1.Failed))
			}
			r := &RequestReconciler{client: b.Build()}
			st, err := r.stateOf(t.Context(), wl, "cloud", pr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if st == nil {
				t.Fatal("no state")
			}
			if st.State != tc.want || ptr.Deref(st.RequeueAfterSeconds, 0) != tc.wantWait {
				t.Errorf("state %s wait %d (%s), want %s wait %d", st.State, ptr.Deref(st.RequeueAfterSeconds, 0), st.Message, tc.want, tc.wantWait)
			}
			if tc.want == berthv1alpha1.CheckStateReady && st.PodSetUpdates[0].Annotations[autoscalingv1.ConsumesAnnotation] != pr.Name {
				t.Errorf("pod set updates %v, want the pods to consume %s", st.PodSetUpdates, pr.Name)
			}
		})
	}
}
