package workload

import (
	"fmt"
	"hash/fnv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Backoff is how long an evicted workload waits before it is queued again,
// for the evictions that would repeat if it were queued at once (its pods
// did not become ready in time): Base doubled for each such requeue before,
// at most Max, and after Limit requeues it is deactivated instead. A zero
// Base requeues at once.
type Backoff struct {
	Base, Max time.Duration
	// Limit is how many requeues are allowed; nil for no limit.
	Limit *int32
}

// backedOff are the eviction reasons that back off: evicting again at once
// would only repeat the eviction. A preempted workload waits its turn in
// the queue instead.
var backedOff = map[string]bool{berthv1alpha1.ReasonPodsReadyTimeout: true}

// RequeueDecision is when an evicted workload may be queued again, or
// whether it must be deactivated.
type RequeueDecision struct {
	// At is when it may be considered again; nil for at once.
	At *time.Time
	// Deactivate is set when it must not be queued again (it exceeded the
	// backoff's limit, say), with the message that says so.
	Deactivate string
	// DeactivateReason is the Requeued=False reason of the deactivation;
	// RequeuingLimitExceeded when empty.
	DeactivateReason string
}

// NextRequeue decides how wl, evicted, is requeued at now. The jitter, up
// to a tenth of the wait, comes from the workload's UID and requeue count,
// so that workloads evicted together do not all return together, and so
// that the same workload at the same count always waits as long.
func NextRequeue(wl *berthv1alpha1.Workload, b Backoff, now time.Time) RequeueDecision {
	ev := FindCondition(wl, berthv1alpha1.WorkloadEvicted)
	if ev != nil && ev.Reason == berthv1alpha1.ReasonAdmissionCheck {
		return checkRequeue(wl, now)
	}
	if ev != nil && ev.Reason == berthv1alpha1.ReasonMaximumExecutionTimeExceeded {
		return RequeueDecision{Deactivate: ev.Message + ". " + resumeHint(wl), DeactivateReason: ev.Reason}
	}
	if ev == nil || !backedOff[ev.Reason] || b.Base <= 0 {
		return RequeueDecision{}
	}
	count := int32(0)
	if rs := wl.Status.RequeueState; rs != nil {
		count = ptr.Deref(rs.Count, 0)
	}
	if b.Limit != nil && count >= *b.Limit {
		return RequeueDecision{Deactivate: fmt.Sprintf(
			"Deactivated after %d requeues, the limit (waitForPodsReady.requeuingStrategy.backoffLimitCount); the last eviction (%s): %s. %s",
			count, ev.Reason, ev.Message, resumeHint(wl))}
	}
	wait := b.Base
	for range count {
		if wait >= b.Max/2 {
			wait = b.Max
			break
		}
		wait *= 2
	}
	if b.Max > 0 {
		wait = min(wait, b.Max)
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", wl.UID, count)
	wait += time.Duration(int64(h.Sum32()%1000) * int64(wait) / 10000)
	at := now.Add(wait).Truncate(time.Second)
	return RequeueDecision{At: &at}
}

// resumeHint tells a deactivated workload's owner how to queue it again.
func resumeHint(wl *berthv1alpha1.Workload) string {
	return fmt.Sprintf("Resume it to queue it again: kubectl berth resume workload %s -n %s", wl.Name, wl.Namespace)
}

// checkRequeue is how a workload evicted by an admission check goes back:
// deactivated, with the check's message, if one rejected it; after the
// wait a check that asks to retry names, otherwise.
func checkRequeue(wl *berthv1alpha1.Workload, now time.Time) RequeueDecision {
	c := FailedCheck(wl)
	switch {
	case c == nil:
		return RequeueDecision{}
	case c.State == berthv1alpha1.CheckStateRejected:
		return RequeueDecision{Deactivate: CheckFailureMessage(c) + ". " + resumeHint(wl), DeactivateReason: berthv1alpha1.ReasonAdmissionCheck}
	case c.RequeueAfterSeconds != nil && *c.RequeueAfterSeconds > 0:
		at := now.Add(time.Duration(*c.RequeueAfterSeconds) * time.Second).Truncate(time.Second)
		return RequeueDecision{At: &at}
	}
	return RequeueDecision{}
}

// DeactivatedByBerth is the condition that says why Berth deactivated wl,
// nil if it did not: Requeued=False with the reason of a deactivating
// requeue (the backoff's limit, the maximum execution time, a rejecting
// admission check). A workload a person deactivated has none.
func DeactivatedByBerth(wl *berthv1alpha1.Workload) *metav1.Condition {
	c := FindCondition(wl, berthv1alpha1.WorkloadRequeued)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	switch c.Reason {
	case berthv1alpha1.ReasonRequeuingLimitExceeded, berthv1alpha1.ReasonMaximumExecutionTimeExceeded, berthv1alpha1.ReasonAdmissionCheck:
		return c
	}
	return nil
}

// WaitingForBackoff reports until when wl waits before it is queued again,
// if it does.
func WaitingForBackoff(wl *berthv1alpha1.Workload, now time.Time) (time.Time, bool) {
	rs := wl.Status.RequeueState
	if rs == nil || rs.RequeueAt == nil || !rs.RequeueAt.After(now) {
		return time.Time{}, false
	}
	return rs.RequeueAt.Time, true
}
