package workload_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// state is what a transition is judged by: each condition's status and
// reason, whether the workload holds an admission, and its requeue count.
type state struct {
	Conditions map[string]string
	Admitted   bool
	Requeues   int32
}

func stateOf(wl *berthv1alpha1.Workload) state {
	st := state{Conditions: map[string]string{}, Admitted: wl.Status.Admission != nil}
	for _, c := range wl.Status.Conditions {
		st.Conditions[c.Type] = string(c.Status) + "/" + c.Reason
	}
	if rs := wl.Status.RequeueState; rs != nil {
		st.Requeues = ptr.Deref(rs.Count, 0)
	}
	return st
}

func TestTransitions(t *testing.T) {
	const (
		reserved = berthv1alpha1.WorkloadQuotaReserved
		admitted = berthv1alpha1.WorkloadAdmitted
		evicted  = berthv1alpha1.WorkloadEvicted
		preempt  = berthv1alpha1.WorkloadPreempted
		requeued = berthv1alpha1.WorkloadRequeued
		ready    = berthv1alpha1.WorkloadPodsReady
		finished = berthv1alpha1.WorkloadFinished
	)
	pending := func() *utiltesting.WorkloadWrapper {
		return utiltesting.MakeWorkload("a", "ns").Queue("q").Request(1, "cpu", "1").
			Condition(reserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0)
	}
	running := func() *utiltesting.WorkloadWrapper {
		return utiltesting.MakeWorkload("a", "ns").Queue("q").Request(1, "cpu", "1").AdmittedIn("cq", "default").
			Condition(ready, metav1.ConditionTrue, "PodsReady", 0)
	}
	owned := func(w *utiltesting.WorkloadWrapper) *berthv1alpha1.Workload {
		wl := w.Obj()
		wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "a", UID: "u", Controller: ptr.To(true)}}
		return wl
	}
	cases := map[string]struct {
		wl          *berthv1alpha1.Workload
		change      workload.Change
		wantChanged bool
		want        state
	}{
		"admit a pending workload": {
			wl:          pending().Obj(),
			change:      workload.Admit(utiltesting.MakeAdmission("cq").Obj()),
			wantChanged: true,
			want:        state{Admitted: true, Conditions: map[string]string{reserved: "True/QuotaReserved", admitted: "True/Admitted"}},
		},
		"admit a requeued workload clears its eviction": {
			wl: pending().Condition(evicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 0).
				Condition(preempt, metav1.ConditionTrue, berthv1alpha1.ReasonInClusterQueue, 0).
				Condition(requeued, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 0).Obj(),
			change:      workload.Admit(utiltesting.MakeAdmission("cq").Obj()),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted",
				evicted: "False/Admitted", preempt: "False/Admitted", requeued: "False/Admitted",
			}},
		},
		"evict keeps the quota": {
			wl:          running().Obj(),
			change:      workload.Evict(berthv1alpha1.ReasonPodsReadyTimeout, "not ready"),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "True/PodsReady", evicted: "True/PodsReadyTimeout",
			}},
		},
		"evict twice changes nothing": {
			wl:     running().Condition(evicted, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReadyTimeout, 0).Obj(),
			change: workload.Evict(berthv1alpha1.ReasonPodsReadyTimeout, ""),
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "True/PodsReady", evicted: "True/PodsReadyTimeout",
			}},
		},
		"preempt a job's workload leaves the requeue to its integration": {
			wl:          owned(running()),
			change:      workload.Preempt(berthv1alpha1.ReasonInCohortReclamation, "reclaimed"),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "True/PodsReady",
				evicted: "True/Preempted", preempt: "True/InCohortReclamation",
			}},
		},
		"preempt a workload nobody runs requeues it": {
			wl:          running().Obj(),
			change:      workload.Preempt(berthv1alpha1.ReasonInClusterQueue, "room for b"),
			wantChanged: true,
			want: state{Requeues: 1, Conditions: map[string]string{
				reserved: "False/Pending", admitted: "False/Pending", ready: "False/Pending",
				evicted: "True/Preempted", preempt: "True/InClusterQueue", requeued: "True/Preempted",
			}},
		},
		"requeue releases the quota and counts": {
			wl: func() *berthv1alpha1.Workload {
				wl := running().Condition(evicted, metav1.ConditionTrue, berthv1alpha1.ReasonDeactivated, 0).Obj()
				wl.Status.RequeueState = &berthv1alpha1.RequeueState{Count: ptr.To[int32](2)}
				return wl
			}(),
			change:      workload.Requeue(workload.RequeueDecision{}),
			wantChanged: true,
			want: state{Requeues: 3, Conditions: map[string]string{
				reserved: "False/Pending", admitted: "False/Pending", ready: "False/Pending",
				evicted: "True/Deactivated", requeued: "True/Deactivated",
			}},
		},
		"finish": {
			wl:          running().Obj(),
			change:      workload.Finish(berthv1alpha1.ReasonSucceeded, "done"),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "True/PodsReady", finished: "True/Succeeded",
			}},
		},
		"set pending": {
			wl:          pending().Obj(),
			change:      workload.SetPending(berthv1alpha1.ReasonInadmissible, "no queue"),
			wantChanged: true,
			want:        state{Conditions: map[string]string{reserved: "False/Inadmissible"}},
		},
		"pods that were ready stop being ready": {
			wl:          running().Obj(),
			change:      workload.SetPodsReady(false),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "False/WaitForRecovery",
			}},
		},
		"pods not ready yet after admission": {
			wl:          utiltesting.MakeWorkload("a", "ns").Queue("q").Request(1, "cpu", "1").AdmittedIn("cq", "default").Obj(),
			change:      workload.SetPodsReady(false),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "False/WaitForStart",
			}},
		},
		"pods not ready after a requeue wait for their start again": {
			wl: utiltesting.MakeWorkload("a", "ns").Queue("q").Request(1, "cpu", "1").AdmittedIn("cq", "default").
				Condition(ready, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj(),
			change:      workload.SetPodsReady(false),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "False/WaitForStart",
			}},
		},
		"pods still recovering": {
			wl:          running().Condition(ready, metav1.ConditionFalse, berthv1alpha1.ReasonWaitForRecovery, 0).Obj(),
			change:      workload.SetPodsReady(false),
			wantChanged: true, // the message
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "False/WaitForRecovery",
			}},
		},
		"pods still ready": {
			wl: func() *berthv1alpha1.Workload {
				wl := running().Obj()
				workload.SetPodsReady(true)(wl)
				return wl
			}(),
			change: workload.SetPodsReady(true),
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "True/PodsReady",
			}},
		},
		"deactivate an admitted workload evicts it": {
			wl:          running().Obj(),
			change:      workload.Deactivate(workload.DeactivatedMessage),
			wantChanged: true,
			want: state{Admitted: true, Conditions: map[string]string{
				reserved: "True/QuotaReserved", admitted: "True/Admitted", ready: "True/PodsReady", evicted: "True/Deactivated",
			}},
		},
		"deactivate a pending workload sets it aside": {
			wl:          pending().Obj(),
			change:      workload.Deactivate(workload.DeactivatedMessage),
			wantChanged: true,
			want:        state{Conditions: map[string]string{reserved: "False/Inadmissible"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec, meta := tc.wl.Spec.DeepCopy(), tc.wl.ObjectMeta.DeepCopy()
			if got := tc.change(tc.wl); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, stateOf(tc.wl)); diff != "" {
				t.Errorf("state after the change (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(spec, &tc.wl.Spec); diff != "" {
				t.Errorf("the change touched the spec (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(meta, &tc.wl.ObjectMeta); diff != "" {
				t.Errorf("the change touched the metadata (-before +after):\n%s", diff)
			}
		})
	}
}

// TestAdmittedMessageIsWrittenOnce: the Admitted condition tells the
// ClusterQueue, the wait and the flavors, and applying the same admission
// again (a retried write) changes nothing, though the wait has grown.
func TestAdmittedMessageIsWrittenOnce(t *testing.T) {
	wl := utiltesting.MakeWorkload("a", "ns").Queue("q").Request(2, "cpu", "1").Obj()
	wl.CreationTimestamp = metav1.NewTime(time.Now().Add(-42 * time.Second))
	adm := utiltesting.MakeAdmission("cq").Assign("main", 2, map[corev1.ResourceName]string{corev1.ResourceCPU: "h100"}, nil).Obj()
	if !workload.Admit(adm)(wl) {
		t.Fatal("Admit changed nothing on a pending workload")
	}
	got := workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted).Message
	if want := "Admitted by ClusterQueue cq after waiting 42s: main: 2 pods, cpu on h100"; got != want {
		t.Errorf("Admitted message %q, want %q", got, want)
	}
	wl.CreationTimestamp = metav1.NewTime(wl.CreationTimestamp.Add(-time.Minute))
	if workload.Admit(adm)(wl) {
		t.Errorf("Admit of the same admission changed the workload again: %q", workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted).Message)
	}
}
