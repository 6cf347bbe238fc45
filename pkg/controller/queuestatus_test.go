package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestClusterQueueActive(t *testing.T) {
	cases := map[string]struct {
		cq         *berthv1alpha1.ClusterQueue
		st         queueState
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		"ready": {
			cq:         utiltesting.MakeClusterQueue("a").Obj(),
			wantStatus: metav1.ConditionTrue, wantReason: berthv1alpha1.ReasonReady, wantMsg: "Can admit new workloads",
		},
		"missing flavors are named": {
			cq:         utiltesting.MakeClusterQueue("a").Obj(),
			st:         queueState{missingFlavors: []string{"h100", "a100"}},
			wantStatus: metav1.ConditionFalse, wantReason: berthv1alpha1.ReasonFlavorNotFound,
			wantMsg: "ResourceFlavor h100, a100 named in spec.resourceGroups does not exist",
		},
		"stopped": {
			cq:         utiltesting.MakeClusterQueue("a").StopPolicy(berthv1alpha1.Hold).Obj(),
			wantStatus: metav1.ConditionFalse, wantReason: berthv1alpha1.ReasonStopped, wantMsg: "The ClusterQueue is stopped (stopPolicy Hold)",
		},
		"a cohort cycle is named": {
			cq:         utiltesting.MakeClusterQueue("a").Cohort("x").Obj(),
			st:         queueState{cohortCycle: "x -> y -> x"},
			wantStatus: metav1.ConditionFalse, wantReason: berthv1alpha1.ReasonCohortCycle,
			wantMsg: "The parentName links of the cohorts above it form a cycle (x -> y -> x): quota cannot flow around a loop; change one cohort's spec.parentName",
		},
		"terminating wins": {
			cq:         utiltesting.MakeClusterQueue("a").StopPolicy(berthv1alpha1.Hold).Obj(),
			st:         queueState{terminating: true, missingFlavors: []string{"h100"}},
			wantStatus: metav1.ConditionFalse, wantReason: berthv1alpha1.ReasonTerminating,
			wantMsg: "The ClusterQueue is being deleted; its admitted workloads run to completion",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := clusterQueueActive(tc.cq, tc.st)
			want := metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: tc.wantStatus, Reason: tc.wantReason, Message: tc.wantMsg}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Active (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetClusterQueueStatus(t *testing.T) {
	fr := resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}
	cq := utiltesting.MakeClusterQueue("a").ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("cpu", "8").Resource("nvidia.com/gpu", "8").Obj()).Obj()
	st := queueState{pending: 2, reserving: 1, admitted: 1, usage: resources.Usage{fr: 10}, borrowed: resources.Usage{fr: 2}}
	if !setClusterQueueStatus(cq, st) {
		t.Fatal("first status: no change reported")
	}
	wantUsage := []berthv1alpha1.FlavorUsage{{Name: "h100", Resources: []berthv1alpha1.ResourceUsage{
		{Name: corev1.ResourceCPU, Total: resources.Quantity(corev1.ResourceCPU, 0), Borrowed: resources.Quantity(corev1.ResourceCPU, 0)},
		{Name: "nvidia.com/gpu", Total: resources.Quantity("nvidia.com/gpu", 10), Borrowed: resources.Quantity("nvidia.com/gpu", 2)},
	}}}
	if diff := cmp.Diff(wantUsage, cq.Status.FlavorsUsage); diff != "" {
		t.Errorf("flavorsUsage (-want +got):\n%s", diff)
	}
	gotCounts := [3]int32{cq.Status.PendingWorkloads, cq.Status.ReservingWorkloads, cq.Status.AdmittedWorkloads}
	if diff := cmp.Diff([3]int32{2, 1, 1}, gotCounts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if setClusterQueueStatus(cq, st) {
		t.Error("the same state again reported a change; the status would be written for nothing")
	}
}

func TestNamespaceMismatch(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml", Labels: map[string]string{"team": "a"}}}
	cases := map[string]struct {
		selector *metav1.LabelSelector
		wantMsg  string
	}{
		"all namespaces":    {selector: &metav1.LabelSelector{}},
		"matching labels":   {selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
		"null selects none": {wantMsg: "ClusterQueue q takes workloads from no namespace: its namespaceSelector is null"},
		"other labels": {
			selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}},
			wantMsg:  "Namespace ml does not match the namespaceSelector of ClusterQueue q (team=b)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cq := utiltesting.MakeClusterQueue("q").Obj()
			cq.Spec.NamespaceSelector = tc.selector
			got, err := namespaceMismatch(cq, ns)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantMsg, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusPacer: a queue's status is written at once, then at most once
// per statusInterval; a change of Active is told apart from counts.
func TestStatusPacer(t *testing.T) {
	p := newStatusPacer(newStatusBudget())
	if w := p.wait("q"); w != 0 {
		t.Errorf("first write waits %v, want 0", w)
	}
	if w := p.wait("q"); w <= 0 || w > statusInterval {
		t.Errorf("second write at once waits %v, want within (0, %v]", w, statusInterval)
	}
	if w := p.wait("other"); w != 0 {
		t.Errorf("another queue's first write waits %v, want 0", w)
	}
	p.forget("q")
	if w := p.wait("q"); w != 0 {
		t.Errorf("a forgotten queue's write waits %v, want 0", w)
	}
	// Once the shared budget is spent, a queue books a turn and keeps it.
	shared := rate.NewLimiter(1, 1)
	a, b := newStatusPacer(shared), newStatusPacer(shared)
	if w := a.wait("a"); w != 0 {
		t.Errorf("first write on a fresh budget waits %v, want 0", w)
	}
	first := b.wait("b")
	if first <= 0 || first > time.Second {
		t.Errorf("a write past the budget waits %v, want within (0, 1s]", first)
	}
	if again := b.wait("b"); again <= 0 || again > first {
		t.Errorf("asking again waits %v, want at most the booked %v", again, first)
	}
	if w := b.wait("c"); w <= first {
		t.Errorf("the next queue waits %v, want after b's turn (%v)", w, first)
	}
	ready := []metav1.Condition{{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonReady}}
	stopped := []metav1.Condition{{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionFalse, Reason: berthv1alpha1.ReasonStopped}}
	if !sameConditions(ready, ready) || sameConditions(ready, stopped) || sameConditions(nil, ready) {
		t.Error("sameConditions does not tell an Active change apart")
	}
	unused := append(slices.Clone(ready), metav1.Condition{Type: berthv1alpha1.ConditionUnusedSettings, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonFeatureDisabled})
	if sameConditions(ready, unused) {
		t.Error("sameConditions does not tell an UnusedSettings change apart")
	}
}
