package workload

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// currentRun is how long wl has run in its current admission at now: from
// its Admitted=True transition to its eviction, or to now while it is not
// evicted; 0 when it is not admitted.
func currentRun(wl *berthv1alpha1.Workload, now time.Time) time.Duration {
	adm := FindCondition(wl, berthv1alpha1.WorkloadAdmitted)
	if adm == nil || adm.Status != metav1.ConditionTrue {
		return 0
	}
	end := now
	if ev := FindCondition(wl, berthv1alpha1.WorkloadEvicted); ev != nil && ev.Status == metav1.ConditionTrue && ev.LastTransitionTime.After(adm.LastTransitionTime.Time) {
		end = ev.LastTransitionTime.Time
	}
	return max(end.Sub(adm.LastTransitionTime.Time), 0)
}

// ExecutionTime is how long wl has run at now, over all its admissions.
func ExecutionTime(wl *berthv1alpha1.Workload, now time.Time) time.Duration {
	past := time.Duration(ptr.Deref(wl.Status.AccumulatedPastExecutionTimeSeconds, 0)) * time.Second
	return past + currentRun(wl, now)
}

// ExecutionTimeLeft is how much longer wl may run at now under
// spec.maximumExecutionTimeSeconds (0 or less once over), and whether it
// has such a limit.
func ExecutionTimeLeft(wl *berthv1alpha1.Workload, now time.Time) (time.Duration, bool) {
	limit := wl.Spec.MaximumExecutionTimeSeconds
	if limit == nil {
		return 0, false
	}
	return time.Duration(*limit)*time.Second - ExecutionTime(wl, now), true
}

// ExecutionTimeExceededMessage says that wl ran longer than its limit.
func ExecutionTimeExceededMessage(wl *berthv1alpha1.Workload, now time.Time) string {
	return fmt.Sprintf("The workload ran %s over all its admissions, beyond its maximumExecutionTimeSeconds of %d (job label %s)",
		ExecutionTime(wl, now).Truncate(time.Second), ptr.Deref(wl.Spec.MaximumExecutionTimeSeconds, 0), berthv1alpha1.MaxExecTimeSecondsLabel)
}

// accumulateExecutionTime adds the admission that is ending to
// status.accumulatedPastExecutionTimeSeconds, saturating at the largest
// int32.
func accumulateExecutionTime(wl *berthv1alpha1.Workload) {
	run := currentRun(wl, time.Now())
	if run <= 0 {
		return
	}
	total := int64(ptr.Deref(wl.Status.AccumulatedPastExecutionTimeSeconds, 0)) + int64(run.Round(time.Second)/time.Second)
	wl.Status.AccumulatedPastExecutionTimeSeconds = ptr.To(int32(min(total, math.MaxInt32)))
}
