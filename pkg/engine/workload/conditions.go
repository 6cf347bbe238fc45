package workload

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// FindCondition returns wl's condition of the given type, or nil.
func FindCondition(wl *berthv1alpha1.Workload, typ string) *metav1.Condition {
	for i := range wl.Status.Conditions {
		if wl.Status.Conditions[i].Type == typ {
			return &wl.Status.Conditions[i]
		}
	}
	return nil
}

// IsConditionTrue reports whether wl has the condition with status True.
func IsConditionTrue(wl *berthv1alpha1.Workload, typ string) bool {
	c := FindCondition(wl, typ)
	return c != nil && c.Status == metav1.ConditionTrue
}

// HasQuotaReservation reports whether quota is reserved for wl.
func HasQuotaReservation(wl *berthv1alpha1.Workload) bool {
	return IsConditionTrue(wl, berthv1alpha1.WorkloadQuotaReserved)
}

// IsAdmitted reports whether wl is admitted.
func IsAdmitted(wl *berthv1alpha1.Workload) bool {
	return IsConditionTrue(wl, berthv1alpha1.WorkloadAdmitted)
}

// IsEvicted reports whether wl was told to stop.
func IsEvicted(wl *berthv1alpha1.Workload) bool {
	return IsConditionTrue(wl, berthv1alpha1.WorkloadEvicted)
}

// IsFinished reports whether wl has finished.
func IsFinished(wl *berthv1alpha1.Workload) bool {
	return IsConditionTrue(wl, berthv1alpha1.WorkloadFinished)
}

// IsActive reports whether wl may be admitted: spec.active unset or true.
func IsActive(wl *berthv1alpha1.Workload) bool {
	return wl.Spec.Active == nil || *wl.Spec.Active
}

// SetCondition sets a condition of wl, stamped with wl's generation. Its
// lastTransitionTime moves only when the status changes. It reports whether
// anything changed, so that callers skip writes that change nothing.
func SetCondition(wl *berthv1alpha1.Workload, typ string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: wl.Generation,
	})
}
