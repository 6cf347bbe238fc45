package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestPriorityPreemptionSuspendsTheVictim(t *testing.T) {
	high := utiltesting.MakeWorkloadPriorityClass(unique("high"), 1000)
	mustCreate(t, high)
	ns, _ := queueSetup(t, "2", func(cq *utiltesting.ClusterQueueWrapper) {
		cq.Preemption(berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority})
	})
	low := utiltesting.MakeJob("low", ns).Queue("main").Parallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, low)
	workloadOf(t, low, "the low-priority job admitted", admitted)
	jobState(t, low, false)

	urgent := utiltesting.MakeJob("urgent", ns).Queue("main").PriorityClass(high.Name).Parallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, urgent)

	workloadOf(t, low, "the low-priority job preempted", func(wl *berthv1alpha1.Workload) error {
		if err := conditionIs(berthv1alpha1.WorkloadPreempted, metav1.ConditionTrue, berthv1alpha1.ReasonInClusterQueue)(wl); err != nil {
			return err
		}
		return conditionIs(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted)(wl)
	})
	jobState(t, low, true)
	workloadOf(t, urgent, "the urgent job admitted", admitted)
	if running := jobState(t, urgent, false); running.Spec.Template.Labels[berthv1alpha1.WorkloadLabel] == "" {
		t.Errorf("the preemptor's pods carry no %s label", berthv1alpha1.WorkloadLabel)
	}
	workloadOf(t, low, "the victim requeued and waiting", func(wl *berthv1alpha1.Workload) error {
		if err := conditionIs(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted)(wl); err != nil {
			return err
		}
		return pendingWith("")(wl)
	})
}

func TestBorrowingAndReclaimInACohort(t *testing.T) {
	cohort := unique("cohort")
	inCohort := func(cq *utiltesting.ClusterQueueWrapper) {
		cq.Cohort(cohort).Preemption(berthv1alpha1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny})
	}
	nsA, cqA := queueSetup(t, "2", inCohort)
	// Team B's queue gets quota in team A's flavor too, so both draw on
	// one pool of the cohort.
	flavorA := queueFlavor(t, cqA)
	nsB := namespace(t, nil)
	cqB := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavorA).Resource("cpu", "2").Obj())
	inCohort(cqB)
	mustCreate(t, cqB.Obj(), utiltesting.MakeLocalQueue("main", nsB, cqB.Name))

	borrower := utiltesting.MakeJob("borrower", nsA).Queue("main").Parallelism(4).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, borrower)
	workloadOf(t, borrower, "team A borrowing team B's idle quota", admitted)
	waitForClusterQueue(t, cqA, func(cq *berthv1alpha1.ClusterQueue) error {
		return usageIs(cq, "4", "2")
	})

	owner := utiltesting.MakeJob("owner", nsB).Queue("main").Parallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, owner)
	workloadOf(t, borrower, "the borrower preempted to reclaim", conditionIs(berthv1alpha1.WorkloadPreempted, metav1.ConditionTrue, berthv1alpha1.ReasonInCohortReclamation))
	workloadOf(t, owner, "team B's job admitted on its own quota", admitted)
	jobState(t, borrower, true)
}

func TestReprioritiseByRelabelling(t *testing.T) {
	high := utiltesting.MakeWorkloadPriorityClass(unique("high"), 500)
	mustCreate(t, high)
	ns, _ := queueSetup(t, "1", nil)
	running := utiltesting.MakeJob("running", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, running)
	workloadOf(t, running, "the first job admitted", admitted)
	first := utiltesting.MakeJob("first", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, first)
	workloadOf(t, first, "the first waiting job pending", pendingWith("needs 1 cpu, 0 available"))
	second := utiltesting.MakeJob("second", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, second)
	workloadOf(t, second, "the second waiting job pending", pendingWith("needs 1 cpu"))

	relabelled := second.DeepCopy()
	waitFor(t, "relabelling the second job", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(second), relabelled); err != nil {
			return err
		}
		relabelled.Labels[berthv1alpha1.PriorityClassLabel] = high.Name
		return server.Client.Update(ctx, relabelled)
	})
	workloadOf(t, second, "the new priority on the workload", func(wl *berthv1alpha1.Workload) error {
		if wl.Spec.Priority == nil || *wl.Spec.Priority != 500 {
			return errorf("priority %v, want 500", wl.Spec.Priority)
		}
		return nil
	})
	finishJob(t, running)
	workloadOf(t, second, "the relabelled job admitted first", admitted)
	workloadOf(t, first, "the older job still waiting", pendingWith("needs 1 cpu"))
}
