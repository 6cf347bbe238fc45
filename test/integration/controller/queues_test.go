package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestClusterQueueWithMissingFlavor(t *testing.T) {
	flavor := unique("flavor")
	cq := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).Resource("cpu", "4").Obj()).Obj()
	ns := namespace(t, nil)
	mustCreate(t, cq, utiltesting.MakeLocalQueue("main", ns, cq.Name))
	waitForClusterQueue(t, cq.Name, activeIs(metav1.ConditionFalse, berthv1alpha1.ReasonFlavorNotFound, "ResourceFlavor "+flavor+" named in spec.resourceGroups does not exist"))
	job := utiltesting.MakeJob("waits", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "a message naming the missing flavor", pendingWith(flavor))

	mustCreate(t, utiltesting.MakeResourceFlavor(flavor))
	waitForClusterQueue(t, cq.Name, activeIs(metav1.ConditionTrue, berthv1alpha1.ReasonReady, ""))
	workloadOf(t, job, "admission once the flavor exists", admitted)
	waitForLocalQueue(t, ns, "main", func(lq *berthv1alpha1.LocalQueue) error {
		if lq.Status.AdmittedWorkloads != 1 || len(lq.Status.FlavorsUsage) != 1 || lq.Status.FlavorsUsage[0].Resources[0].Total.String() != "1" {
			return fmt.Errorf("want 1 admitted using 1 cpu, status %+v", lq.Status)
		}
		return nil
	})
}

func TestNamespaceOutsideTheSelectorWaits(t *testing.T) {
	ns, cqName := queueSetup(t, "4", func(cq *utiltesting.ClusterQueueWrapper) {
		cq.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	})
	job := utiltesting.MakeJob("outsider", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "a message naming the selector", pendingWith("Namespace "+ns+" does not match the namespaceSelector of ClusterQueue "+cqName))
	jobState(t, job, true)
}

func TestLocalQueueHoldAndDrainEvicts(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("drained", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "admission", admitted)
	waitFor(t, "stopping the LocalQueue", func(ctx context.Context) error {
		lq := &berthv1alpha1.LocalQueue{}
		if err := server.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "main"}, lq); err != nil {
			return err
		}
		lq.Spec.StopPolicy = berthv1alpha1.HoldAndDrain
		return server.Client.Update(ctx, lq)
	})
	workloadOf(t, job, "eviction by the stopped queue", conditionIs(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonLocalQueueStopped))
	jobState(t, job, true)
	workloadOf(t, job, "held while the queue is stopped", pendingWith("LocalQueue main is stopped (stopPolicy HoldAndDrain)"))
	waitForLocalQueue(t, ns, "main", func(lq *berthv1alpha1.LocalQueue) error {
		c := meta.FindStatusCondition(lq.Status.Conditions, berthv1alpha1.ConditionActive)
		if c == nil || c.Reason != berthv1alpha1.ReasonStopped {
			return fmt.Errorf("want Active reason Stopped, conditions %v", lq.Status.Conditions)
		}
		return nil
	})
}

// TestQueueStatusForgetsDeletedWorkloads deletes a queue's last workload,
// admitted, once its statuses are written and nothing else is due: the
// queues must stop counting it and its quota. A Workload has no finalizer,
// so its deletion is its last event.
func TestQueueStatusForgetsDeletedWorkloads(t *testing.T) {
	ns, cqName := queueSetup(t, "1", nil)
	job := utiltesting.MakeJob("runs", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	wl := workloadOf(t, job, "admission", admitted)
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("want 1 admitted, status %+v", cq.Status)
		}
		return usageIs(cq, "1", "0")
	})
	waitForLocalQueue(t, ns, "main", func(lq *berthv1alpha1.LocalQueue) error {
		if lq.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("want 1 admitted, status %+v", lq.Status)
		}
		return nil
	})
	// Past the pacer's interval no write of the statuses is due: only the
	// deletion can bring one.
	time.Sleep(6 * time.Second)

	ctx := ctxFor(t)
	for _, obj := range []client.Object{job, wl} {
		if err := server.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
	}
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.ReservingWorkloads != 0 || cq.Status.AdmittedWorkloads != 0 {
			return fmt.Errorf("want no workloads counted, status %+v", cq.Status)
		}
		return usageIs(cq, "0", "0")
	})
	waitForLocalQueue(t, ns, "main", func(lq *berthv1alpha1.LocalQueue) error {
		if lq.Status.ReservingWorkloads != 0 || lq.Status.AdmittedWorkloads != 0 {
			return fmt.Errorf("want no workloads counted, status %+v", lq.Status)
		}
		return nil
	})
}

func TestPriorityClassValueChangeReordersWaitingWork(t *testing.T) {
	class := utiltesting.MakeWorkloadPriorityClass(unique("batch"), 10)
	mustCreate(t, class)
	ns, _ := queueSetup(t, "1", nil)
	job := utiltesting.MakeJob("batch", ns).Queue("main").PriorityClass(class.Name).Parallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "the class's priority", priorityIs(10))
	waitFor(t, "changing the class's value", func(ctx context.Context) error {
		cur := &berthv1alpha1.WorkloadPriorityClass{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(class), cur); err != nil {
			return err
		}
		cur.Value = 50
		return server.Client.Update(ctx, cur)
	})
	workloadOf(t, job, "the new priority on the waiting workload", priorityIs(50))
}

func priorityIs(p int32) func(*berthv1alpha1.Workload) error {
	return func(wl *berthv1alpha1.Workload) error {
		if wl.Spec.Priority == nil || *wl.Spec.Priority != p {
			return fmt.Errorf("priority %v, want %d", wl.Spec.Priority, p)
		}
		return nil
	}
}

func activeIs(status metav1.ConditionStatus, reason, msg string) func(*berthv1alpha1.ClusterQueue) error {
	return func(cq *berthv1alpha1.ClusterQueue) error {
		c := meta.FindStatusCondition(cq.Status.Conditions, berthv1alpha1.ConditionActive)
		if c == nil || c.Status != status || c.Reason != reason || !contains(c.Message, msg) {
			return fmt.Errorf("want Active=%s %s %q, conditions %v", status, reason, msg, cq.Status.Conditions)
		}
		return nil
	}
}

func waitForLocalQueue(t *testing.T, ns, name string, check func(*berthv1alpha1.LocalQueue) error) {
	t.Helper()
	waitFor(t, "LocalQueue "+name, func(ctx context.Context) error {
		lq := &berthv1alpha1.LocalQueue{}
		if err := server.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lq); err != nil {
			return err
		}
		return check(lq)
	})
}
