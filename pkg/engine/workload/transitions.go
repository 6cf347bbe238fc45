package workload

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// A Change is one transition of a Workload's life, applied to a Workload
// whose status is the caller's own copy. It changes the status and nothing
// else, and reports whether anything changed, so that callers skip writes
// that change nothing.
//
// The states and the transitions between them:
//
//	pending --Admit--> admitted --Evict/Preempt--> evicted --Requeue--> pending
//	admitted --Finish--> finished
//	pending --SetPending--> pending (why it waits)
//
// A workload without an owner that Berth runs has nothing to stop, and is
// requeued in the same write that evicts it.
type Change func(wl *berthv1alpha1.Workload) bool

// Admit reserves quota for the workload in adm's ClusterQueue and admits it
// or, when the queue has admission checks for it, sets them Pending: it is
// admitted once they are all Ready (AdmitChecked). A workload admitted
// again after an eviction is no longer evicted: the Evicted, Preempted and
// Requeued conditions stay, False, with when and why they last were True
// in their lastTransitionTime.
func Admit(adm *berthv1alpha1.Admission, checks ...berthv1alpha1.AdmissionCheckReference) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		changed := !equality.Semantic.DeepEqual(wl.Status.Admission, adm)
		wl.Status.Admission = adm
		reserved := fmt.Sprintf("Quota reserved in ClusterQueue %s", adm.ClusterQueue)
		changed = SetCondition(wl, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, reserved) || changed
		changed = setChecksPending(wl, checks, "") || changed
		if len(checks) > 0 {
			changed = SetCondition(wl, berthv1alpha1.WorkloadAdmitted, metav1.ConditionFalse, berthv1alpha1.ReasonPending,
				fmt.Sprintf("Quota reserved in ClusterQueue %s; waiting for admission checks %s", adm.ClusterQueue, checkNames(wl))) || changed
		} else {
			changed = setAdmitted(wl, adm, "") || changed
		}
		for _, typ := range []string{berthv1alpha1.WorkloadEvicted, berthv1alpha1.WorkloadPreempted, berthv1alpha1.WorkloadRequeued} {
			if FindCondition(wl, typ) != nil {
				changed = SetCondition(wl, typ, metav1.ConditionFalse, berthv1alpha1.ReasonAdmitted, reserved) || changed
			}
		}
		return changed
	}
}

// setAdmitted sets wl's Admitted condition for its admission adm, after
// the admission checks ready when it waited for them, unless it says so
// already: its message tells the wait, which a second write of the same
// admission must not tell again.
func setAdmitted(wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission, ready string) bool {
	if c := FindCondition(wl, berthv1alpha1.WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue &&
		strings.HasPrefix(c.Message, fmt.Sprintf("Admitted by ClusterQueue %s ", adm.ClusterQueue)) {
		return false
	}
	return SetCondition(wl, berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue, berthv1alpha1.ReasonAdmitted,
		AdmittedMessage(wl, adm, time.Now(), ready))
}

// Evict tells an admitted workload to stop, for reason. It keeps its quota
// until Requeue.
func Evict(reason, message string) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		return SetCondition(wl, berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, reason, message)
	}
}

// Preempt evicts a workload to make room for another: Evicted with reason
// Preempted, and Preempted with reason, one of InClusterQueue,
// InCohortReclamation and InCohortReclaimWhileBorrowing. A workload that
// no job integration owns is requeued at once (see Change).
func Preempt(reason, message string) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		changed := SetCondition(wl, berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, message)
		changed = SetCondition(wl, berthv1alpha1.WorkloadPreempted, metav1.ConditionTrue, reason, message) || changed
		if metav1.GetControllerOf(wl) == nil {
			changed = Requeue(RequeueDecision{})(wl) || changed
		}
		return changed
	}
}

// Requeue releases an evicted workload's quota and queues it again: its
// admission is cleared, QuotaReserved and Admitted are False, Requeued is
// True with the eviction's reason, and the requeue is counted. With d.At
// set it waits until then (requeueState.requeueAt); with d.Deactivate set
// it is not queued again but set aside with that message (its spec.active
// is set to false beside this).
func Requeue(d RequeueDecision) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		reason, why := berthv1alpha1.ReasonPending, "the workload was evicted"
		if ev := FindCondition(wl, berthv1alpha1.WorkloadEvicted); ev != nil {
			reason, why = ev.Reason, ev.Message
		}
		accumulateExecutionTime(wl)
		wl.Status.Admission = nil
		msg := fmt.Sprintf("Requeued after eviction (%s): %s", reason, why)
		// The next reservation is checked, and dispatched, afresh.
		wl.Status.AdmissionChecks = nil
		wl.Status.ClusterName = ""
		if d.At != nil {
			msg += fmt.Sprintf("; it waits until %s before it is considered again", d.At.UTC().Format(time.RFC3339))
		}
		if d.Deactivate != "" {
			SetCondition(wl, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonInadmissible, d.Deactivate)
			SetCondition(wl, berthv1alpha1.WorkloadAdmitted, metav1.ConditionFalse, berthv1alpha1.ReasonInadmissible, d.Deactivate)
			SetCondition(wl, berthv1alpha1.WorkloadRequeued, metav1.ConditionFalse, cmp.Or(d.DeactivateReason, berthv1alpha1.ReasonRequeuingLimitExceeded), d.Deactivate)
			if FindCondition(wl, berthv1alpha1.WorkloadPodsReady) != nil {
				SetCondition(wl, berthv1alpha1.WorkloadPodsReady, metav1.ConditionFalse, berthv1alpha1.ReasonInadmissible, d.Deactivate)
			}
			return true
		}
		SetCondition(wl, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
		SetCondition(wl, berthv1alpha1.WorkloadAdmitted, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
		SetCondition(wl, berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, reason, msg)
		if FindCondition(wl, berthv1alpha1.WorkloadPodsReady) != nil {
			SetCondition(wl, berthv1alpha1.WorkloadPodsReady, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
		}
		state := wl.Status.RequeueState
		if state == nil {
			state = &berthv1alpha1.RequeueState{}
		}
		state.Count = ptr.To(ptr.Deref(state.Count, 0) + 1)
		state.RequeueAt = nil
		if d.At != nil {
			state.RequeueAt = ptr.To(metav1.NewTime(*d.At))
		}
		wl.Status.RequeueState = state
		return true
	}
}

// Reactivate starts the backoff of a workload over: it was deactivated
// after too many requeues, and a person set spec.active to true again.
func Reactivate() Change {
	return func(wl *berthv1alpha1.Workload) bool {
		wl.Status.RequeueState = nil
		wl.Status.AccumulatedPastExecutionTimeSeconds = nil
		msg := "Reactivated: spec.active was set to true again, and its requeue count and execution time start over"
		SetCondition(wl, berthv1alpha1.WorkloadRequeued, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
		SetCondition(wl, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
		return true
	}
}

// Finish marks a workload finished, for reason Succeeded or Failed; its
// quota is released.
func Finish(reason, message string) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		return SetCondition(wl, berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, reason, message)
	}
}

// SetPending says why a pending workload waits: QuotaReserved False with
// reason Pending (it may fit later) or Inadmissible (it cannot be queued
// until something about it or its queue changes), and a message in numbers.
func SetPending(reason, message string) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		return SetCondition(wl, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, reason, message)
	}
}

// SetPodsReady records whether all the pods the workload runs at once are
// ready, and, when they are not, whether they ever were since its admission
// (WaitForRecovery) or not (WaitForStart): the pods-ready timeouts run from
// the admission and from the condition's lastTransitionTime respectively.
// A requeue sets the condition to reason Pending, so the next admission
// starts with WaitForStart.
func SetPodsReady(ready bool) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		if ready {
			return SetCondition(wl, berthv1alpha1.WorkloadPodsReady, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReady, "All pods are ready")
		}
		if c := FindCondition(wl, berthv1alpha1.WorkloadPodsReady); c != nil &&
			(c.Status == metav1.ConditionTrue || c.Reason == berthv1alpha1.ReasonWaitForRecovery) {
			return SetCondition(wl, berthv1alpha1.WorkloadPodsReady, metav1.ConditionFalse, berthv1alpha1.ReasonWaitForRecovery, "The pods were all ready; not all are now")
		}
		return SetCondition(wl, berthv1alpha1.WorkloadPodsReady, metav1.ConditionFalse, berthv1alpha1.ReasonWaitForStart, "Not all pods are ready yet")
	}
}

// DeactivatedMessage is why a workload with spec.active false neither runs
// nor waits.
const DeactivatedMessage = "The workload is deactivated: spec.active is false"

// Deactivate stops a workload whose spec.active is false: one that holds
// quota is evicted, one that waits is set aside as inadmissible.
func Deactivate(message string) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		if HasQuotaReservation(wl) {
			return Evict(berthv1alpha1.ReasonDeactivated, message)(wl)
		}
		return SetPending(berthv1alpha1.ReasonInadmissible, message)(wl)
	}
}
