package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// TestNotifierTellsAQueueOnceUntilItsReconcileStarts: changes of a queue
// told before its reconcile starts are one request; a change after the
// start is a new one, so that none is lost.
func TestNotifierTellsAQueueOnceUntilItsReconcileStarts(t *testing.T) {
	n := NewStatusNotifier()
	wl := &berthv1alpha1.Workload{}
	wl.Namespace, wl.Spec.QueueName = "team-a", "main"
	wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "gpu"}
	lq := types.NamespacedName{Namespace: "team-a", Name: "main"}

	for range 3 {
		n.WorkloadChanged(wl)
	}
	n.LocalQueueChanged(types.NamespacedName{Namespace: "team-b", Name: "main"})
	if got := len(n.localQueues); got != 2 {
		t.Errorf("%d LocalQueue requests after three changes of one queue and one of another; want 2", got)
	}
	if got := len(n.clusterQueues); got != 1 {
		t.Errorf("%d ClusterQueue requests after three changes of one queue; want 1", got)
	}

	n.toldLQs.remove(lq)
	n.toldCQs.remove("gpu")
	n.WorkloadChanged(wl)
	n.WorkloadChanged(wl)
	if got := len(n.localQueues); got != 3 {
		t.Errorf("%d LocalQueue requests; want one more once its reconcile started", got)
	}
	if got := len(n.clusterQueues); got != 2 {
		t.Errorf("%d ClusterQueue requests; want one more once its reconcile started", got)
	}
}
