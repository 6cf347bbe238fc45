package provisioning

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Defaults of a ProvisioningRequestConfig's retryStrategy.
const (
	defaultBackoffLimit = 3
	defaultBackoffBase  = 60
	defaultBackoffMax   = 1800
)

// checkState is the state of wl's check name that request pr's conditions
// say, as the package comment tells: failed is how many of wl's requests
// for the check have failed, pr included, and counts only when pr has.
// It is nil when the check must stay as it is: Ready stays Ready, since the
// workload may already run on the nodes.
func checkState(wl *berthv1alpha1.Workload, name berthv1alpha1.AdmissionCheckReference, pr *autoscalingv1.ProvisioningRequest, cfg *berthv1alpha1.ProvisioningRequestConfig, failed int) *berthv1alpha1.AdmissionCheckState {
	st := &berthv1alpha1.AdmissionCheckState{Name: name, State: berthv1alpha1.CheckStatePending}
	switch {
	case isTrue(pr, autoscalingv1.Failed):
		retry(st, pr, cfg.Spec.RetryStrategy, failed)
	case isTrue(pr, autoscalingv1.CapacityRevoked):
		st.State = berthv1alpha1.CheckStateRetry
		st.Message = fmt.Sprintf("ProvisioningRequest %s: the capacity was revoked: %s", pr.Name, conditionMessage(pr, autoscalingv1.CapacityRevoked))
	case isTrue(pr, autoscalingv1.BookingExpired) && !workload.IsAdmitted(wl):
		st.State = berthv1alpha1.CheckStateRetry
		st.Message = fmt.Sprintf("ProvisioningRequest %s: the booking expired before the workload was admitted: %s", pr.Name, conditionMessage(pr, autoscalingv1.BookingExpired))
	case isTrue(pr, autoscalingv1.Provisioned):
		st.State = berthv1alpha1.CheckStateReady
		st.Message = fmt.Sprintf("ProvisioningRequest %s is provisioned", pr.Name)
		st.PodSetUpdates = podSetUpdates(wl, pr, cfg)
	case isTrue(pr, autoscalingv1.Accepted):
		st.Message = fmt.Sprintf("ProvisioningRequest %s accepted; waiting for the capacity", pr.Name)
	default:
		st.Message = fmt.Sprintf("ProvisioningRequest %s created; waiting for the capacity", pr.Name)
	}
	if cur := workload.FindCheck(wl, name); cur != nil && cur.State == berthv1alpha1.CheckStateReady && st.State == berthv1alpha1.CheckStatePending {
		return nil
	}
	return st
}

// retry sets st for failed request pr, the failed-th of its workload: Retry
// after a backoff while the retry strategy rs allows, then Rejected.
func retry(st *berthv1alpha1.AdmissionCheckState, pr *autoscalingv1.ProvisioningRequest, rs *berthv1alpha1.ProvisioningRequestRetryStrategy, failed int) {
	if rs == nil {
		rs = &berthv1alpha1.ProvisioningRequestRetryStrategy{}
	}
	limit := ptr.Deref(rs.BackoffLimitCount, defaultBackoffLimit)
	msg := conditionMessage(pr, autoscalingv1.Failed)
	if int32(failed) > limit {
		st.State = berthv1alpha1.CheckStateRejected
		st.Message = fmt.Sprintf("ProvisioningRequest %s failed, %d failures, more than the %d retries allowed: %s", pr.Name, failed, limit, msg)
		return
	}
	wait := backoff(failed, ptr.Deref(rs.BackoffBaseSeconds, defaultBackoffBase), ptr.Deref(rs.BackoffMaxSeconds, defaultBackoffMax))
	st.State, st.RequeueAfterSeconds = berthv1alpha1.CheckStateRetry, &wait
	st.Message = fmt.Sprintf("ProvisioningRequest %s failed (retry %d of %d, in %ds): %s", pr.Name, failed, limit, wait, msg)
}

// backoff is the wait before retry n (from 1): base doubled n-1 times, at
// most max.
func backoff(n int, base, maxWait int32) int32 {
	wait := base
	for i := 1; i < n && wait < maxWait; i++ {
		wait *= 2
	}
	return min(wait, maxWait)
}

func isTrue(pr *autoscalingv1.ProvisioningRequest, typ string) bool {
	return meta.IsStatusConditionTrue(pr.Status.Conditions, typ)
}

func conditionMessage(pr *autoscalingv1.ProvisioningRequest, typ string) string {
	if c := meta.FindStatusCondition(pr.Status.Conditions, typ); c != nil && c.Message != "" {
		return c.Message
	}
	return typ
}

// podSetUpdates are what the pods of the podsets a provisioned request pr
// asked nodes for get: the annotations that have them consume its
// capacity, and the node selector entries cfg takes from its class's
// details.
func podSetUpdates(wl *berthv1alpha1.Workload, pr *autoscalingv1.ProvisioningRequest, cfg *berthv1alpha1.ProvisioningRequestConfig) []berthv1alpha1.PodSetUpdate {
	var selector map[string]string
	if u := cfg.Spec.PodSetUpdates; u != nil {
		for _, ns := range u.NodeSelector {
			if v, ok := pr.Status.ProvisioningClassDetails[ns.ValueFromProvisioningClassDetail]; ok {
				if selector == nil {
					selector = map[string]string{}
				}
				selector[ns.Key] = string(v)
			}
		}
	}
	var out []berthv1alpha1.PodSetUpdate
	for _, name := range requested(wl, cfg) {
		out = append(out, berthv1alpha1.PodSetUpdate{Name: name, NodeSelector: selector, Annotations: map[string]string{
			autoscalingv1.ConsumesAnnotation:  pr.Name,
			autoscalingv1.ClassNameAnnotation: pr.Spec.ProvisioningClassName,
		}})
	}
	return out
}

// resourceNames lists resources for a message.
func resourceNames(rs []corev1.ResourceName) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}
