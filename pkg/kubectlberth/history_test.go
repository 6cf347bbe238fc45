package kubectlberth

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// TestHistoryWithinASecond: conditions tell the time to the second, the
// events API to the microsecond; a Workload created, reserved, admitted in
// one second reads in that order, and spends no time pending.
func TestHistoryWithinASecond(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 2, 43, 20, 0, time.UTC)
	wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: "uid-w", CreationTimestamp: metav1.NewTime(t0),
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "train", UID: "uid-j"}}}}
	wl.Status.Conditions = []metav1.Condition{
		{Type: berthv1alpha1.WorkloadQuotaReserved, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0), Reason: "QuotaReserved"},
		{Type: berthv1alpha1.WorkloadFinished, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(6 * time.Second)), Reason: "Succeeded"},
	}
	event := func(uid, reason string, d time.Duration) corev1.Event {
		return corev1.Event{Reason: reason, EventTime: metav1.NewMicroTime(t0.Add(d)), InvolvedObject: corev1.ObjectReference{UID: types.UID("uid-" + uid)}}
	}
	entries := historyEntries(wl, []corev1.Event{
		event("j", jobframework.EventCreatedWorkload, 400*time.Millisecond),
		event("w", berthv1alpha1.WorkloadAdmitted, 500*time.Millisecond),
		event("j", "Completed", 6*time.Second+100*time.Millisecond),
	})
	var reasons []string
	for _, e := range entries {
		reasons = append(reasons, e.Reason)
	}
	want := []string{jobframework.EventCreatedWorkload, berthv1alpha1.WorkloadQuotaReserved, berthv1alpha1.WorkloadAdmitted, "Completed", berthv1alpha1.WorkloadFinished}
	if !slices.Equal(reasons, want) {
		t.Errorf("entries %v, want %v", reasons, want)
	}
	spans := stateSpans(entries)
	if len(spans) != 1 || spans[0].State != StateAdmitted || spans[0].Seconds == nil || *spans[0].Seconds != 6 {
		t.Errorf("spans %+v, want Admitted for 6s alone", spans)
	}
}

// TestHistoryKeepsAnEviction: preempted and requeued within a second, a
// workload was still evicted in between; only the waits before an
// admission fold into it.
func TestHistoryKeepsAnEviction(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration, reason string) HistoryEntry {
		return HistoryEntry{Time: t0.Add(d), Reason: reason}
	}
	spans := stateSpans([]HistoryEntry{
		at(0, jobframework.EventCreatedWorkload),
		at(100*time.Millisecond, berthv1alpha1.WorkloadAdmitted),
		at(10*time.Second+100*time.Millisecond, berthv1alpha1.WorkloadPreempted),
		at(10*time.Second+600*time.Millisecond, berthv1alpha1.WorkloadRequeued),
		at(20*time.Second, berthv1alpha1.WorkloadAdmitted),
	})
	var states []string
	for _, s := range spans {
		states = append(states, s.State)
	}
	if want := []string{StateAdmitted, StateEvicted, StatePending, StateAdmitted}; !slices.Equal(states, want) {
		t.Errorf("states %v, want %v", states, want)
	}
}
