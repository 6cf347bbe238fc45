package controller

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestDeletedClusterQueueKeepsAdmittedWorkUntilItFinishes(t *testing.T) {
	ns, cqName := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("keeps-running", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "admission", admitted)
	if err := server.Client.Delete(ctxFor(t), &berthv1alpha1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: cqName}}); err != nil {
		t.Fatal(err)
	}
	waitForClusterQueue(t, cqName, activeIs(metav1.ConditionFalse, berthv1alpha1.ReasonTerminating, ""))
	later := utiltesting.MakeJob("arrives-later", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, later)
	workloadOf(t, later, "no admission in a queue being deleted", pendingWith("ClusterQueue "+cqName+" is being deleted"))
	jobState(t, job, false)

	finishJob(t, job)
	waitFor(t, "the ClusterQueue gone once its work finished", func(ctx context.Context) error {
		err := server.Client.Get(ctx, client.ObjectKey{Name: cqName}, &berthv1alpha1.ClusterQueue{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}

func TestDeactivatedWorkloadIsEvictedAndHeld(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("paused", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	wl := workloadOf(t, job, "admission", admitted)
	waitFor(t, "deactivating the workload", func(ctx context.Context) error {
		cur := &berthv1alpha1.Workload{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), cur); err != nil {
			return err
		}
		orig := cur.DeepCopy()
		cur.Spec.Active = ptr.To(false)
		return server.Client.Patch(ctx, cur, client.MergeFrom(orig))
	})
	workloadOf(t, job, "eviction", conditionIs(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonDeactivated))
	jobState(t, job, true)
	workloadOf(t, job, "held", pendingWith("The workload is deactivated: spec.active is false"))
}

func TestSchedulerNameOfTheClusterQueue(t *testing.T) {
	ns, _ := queueSetup(t, "4", func(cq *utiltesting.ClusterQueueWrapper) {
		cq.Spec.SchedulerName = "berth-scheduler"
	})
	job := utiltesting.MakeJob("scheduled", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "admission", admitted)
	if got := jobState(t, job, false).Spec.Template.Spec.SchedulerName; got != "berth-scheduler" {
		t.Errorf("schedulerName = %q, want the ClusterQueue's berth-scheduler", got)
	}
}
