package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/queue"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestLocalQueueCountsWaitForTheirTurn: between two paced status writes a
// workload event does not make the reconciler count the queue's workloads
// again; a change of Active is still written at once.
func TestLocalQueueCountsWaitForTheirTurn(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	lq := utiltesting.MakeLocalQueue("main", "ns", "cq")
	lq.Generation = 1 // as the API server sets it; the fake client does not
	cq := utiltesting.MakeClusterQueue("cq").Obj()
	wl := utiltesting.MakeWorkload("w", "ns").Queue("main").Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(lq, cq, wl).WithStatusSubresource(lq, cq, wl).
		WithIndex(&berthv1alpha1.Workload{}, "spec.queueName", func(o client.Object) []string {
			return []string{string(o.(*berthv1alpha1.Workload).Spec.QueueName)}
		}).Build()
	lists := 0
	workloadsOf := func(ns, name string, f func(*berthv1alpha1.Workload)) error {
		lists++
		wls := &berthv1alpha1.WorkloadList{}
		if err := c.List(ctx, wls, client.InNamespace(ns), client.MatchingFields{"spec.queueName": name}); err != nil {
			return err
		}
		for i := range wls.Items {
			f(&wls.Items[i])
		}
		return nil
	}
	r := &LocalQueueReconciler{client: c, workloads: workloadsOf, queues: queue.NewManager(), notifier: NewStatusNotifier(), pacer: newStatusPacer(newStatusBudget()), seen: map[types.NamespacedName]int64{}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(lq)}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	reconcile()
	got := &berthv1alpha1.LocalQueue{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.PendingWorkloads != 1 {
		t.Fatalf("pendingWorkloads after the first reconcile = %d, want 1", got.Status.PendingWorkloads)
	}
	counted := lists

	// Another workload arrives right after the write.
	if err := c.Create(ctx, utiltesting.MakeWorkload("w2", "ns").Queue("main").Obj()); err != nil {
		t.Fatal(err)
	}
	res := reconcile()
	if lists != counted {
		t.Errorf("the workloads were listed %d more times before the queue's turn, want 0", lists-counted)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > statusInterval {
		t.Errorf("RequeueAfter = %v, want within (0, %v]", res.RequeueAfter, statusInterval)
	}

	// Its ClusterQueue becomes inactive: Active changes and is written at once.
	stopped := &berthv1alpha1.ClusterQueue{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cq), stopped); err != nil {
		t.Fatal(err)
	}
	stopped.Status.Conditions = []metav1.Condition{{
		Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionFalse, Reason: berthv1alpha1.ReasonStopped,
		Message: "The ClusterQueue is stopped (stopPolicy Hold)", LastTransitionTime: metav1.Now(),
	}}
	if err := c.Status().Update(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if res := reconcile(); res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter on an Active change = %v, want 0", res.RequeueAfter)
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.PendingWorkloads != 2 {
		t.Errorf("pendingWorkloads with the Active change = %d, want 2", got.Status.PendingWorkloads)
	}
}
