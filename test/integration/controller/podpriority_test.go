package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestPriorityFromThePodsPriorityClass: a Job that names no
// WorkloadPriorityClass takes the priority of its pods' PriorityClass, and
// its Workload says where it came from; one that names both takes the
// WorkloadPriorityClass's.
func TestPriorityFromThePodsPriorityClass(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: unique("pods-high")}, Value: 500}
	wpc := &berthv1alpha1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: unique("research")}, Value: 70}
	mustCreate(t, pc, wpc)
	fromPods := utiltesting.MakeJob("from-pods", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	fromPods.Spec.Template.Spec.PriorityClassName = pc.Name
	both := utiltesting.MakeJob("both", ns).Queue("main").PriorityClass(wpc.Name).Request(corev1.ResourceCPU, "1").Obj()
	both.Spec.Template.Spec.PriorityClassName = pc.Name
	mustCreate(t, fromPods, both)

	wl := workloadOf(t, fromPods, "the pods' priority", func(wl *berthv1alpha1.Workload) error {
		if ptr.Deref(wl.Spec.Priority, 0) != 500 {
			return errorf("spec.priority %v, want 500", wl.Spec.Priority)
		}
		return nil
	})
	if want := (berthv1alpha1.PriorityClassRef{Group: "scheduling.k8s.io", Kind: "PriorityClass", Name: pc.Name}); wl.Spec.PriorityClassRef == nil || *wl.Spec.PriorityClassRef != want || wl.Spec.PriorityClassName != "" {
		t.Errorf("priorityClassRef %+v, priorityClassName %q; want %+v and none", wl.Spec.PriorityClassRef, wl.Spec.PriorityClassName, want)
	}
	wl = workloadOf(t, both, "the WorkloadPriorityClass's priority", func(wl *berthv1alpha1.Workload) error {
		if ptr.Deref(wl.Spec.Priority, 0) != 70 {
			return errorf("spec.priority %v, want 70", wl.Spec.Priority)
		}
		return nil
	})
	if want := (berthv1alpha1.PriorityClassRef{Group: "berth.dev", Kind: "WorkloadPriorityClass", Name: wpc.Name}); wl.Spec.PriorityClassRef == nil || *wl.Spec.PriorityClassRef != want {
		t.Errorf("priorityClassRef %+v, want %+v", wl.Spec.PriorityClassRef, want)
	}
}
