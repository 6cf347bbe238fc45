package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestNodeFailuresEvictTheWholeWorkload runs a manager with a 2s grace
// period for failed nodes. Three admitted workloads run pods on four
// nodes; this test plays the kubelets and the pod binding. A node that is
// not ready for a moment and recovers evicts nothing; one that stays not
// ready evicts the workload that ran a pod there, and only it; a deleted
// node evicts the workload whose pods it ran, although its pods go with it.
func TestNodeFailuresEvictTheWholeWorkload(t *testing.T) {
	withManager(t, func(o *controllermanager.Options) { o.Controllers.NodeFailureGrace = 2 * time.Second })
	ns, _ := queueSetup(t, "8", nil)
	nodes := map[string]*corev1.Node{}
	for _, n := range []string{"flaky", "down", "gone", "fine"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: unique(n)}}
		mustCreate(t, node)
		setNodeReady(t, node, corev1.ConditionTrue)
		nodes[n] = node
	}
	run := func(name string, on ...string) *berthv1alpha1.Workload {
		wl := utiltesting.MakeWorkload(name, ns).Queue("main").PodSets(*utiltesting.MakePodSet("main", int32(len(on))).Request("cpu", "1").Obj()).Obj()
		mustCreate(t, wl)
		waitForWorkload(t, wl, name+" admitted", admitted)
		for i, n := range on {
			pod := utiltesting.MakePod(fmt.Sprintf("%s-%d", name, i), ns).Obj()
			pod.Labels = map[string]string{berthv1alpha1.ManagedLabel: "true", berthv1alpha1.WorkloadLabel: name}
			pod.Spec.NodeName = nodes[n].Name
			mustCreate(t, pod)
		}
		return wl
	}
	flaky := run("on-flaky", "flaky", "fine")
	down := run("on-down", "down", "fine")
	gone := run("on-gone", "gone", "fine")
	untouched := run("elsewhere", "fine")

	setNodeReady(t, nodes["flaky"], corev1.ConditionFalse)
	setNodeReady(t, nodes["down"], corev1.ConditionUnknown)
	time.Sleep(500 * time.Millisecond)
	setNodeReady(t, nodes["flaky"], corev1.ConditionTrue)
	if err := server.Client.Delete(ctxFor(t), nodes["gone"]); err != nil {
		t.Fatal(err)
	}
	for _, wl := range []*berthv1alpha1.Workload{down, gone} {
		waitForWorkload(t, wl, wl.Name+" evicted for its node", func(wl *berthv1alpha1.Workload) error {
			ev := workload.FindCondition(wl, berthv1alpha1.WorkloadEvicted)
			if ev == nil || ev.Status != metav1.ConditionTrue || ev.Reason != berthv1alpha1.ReasonNodeFailures {
				return errorf("Evicted = %+v", ev)
			}
			if !contains(ev.Message, "stayed so for 2s (nodeFailures.gracePeriod)") || !contains(ev.Message, wl.Name+"-0") {
				return errorf("the eviction says %q, want the node, the grace period and the pod", ev.Message)
			}
			return nil
		})
	}
	waitForEvent(t, ns, down.Name, berthv1alpha1.WorkloadEvicted, "(NodeFailures): Node "+nodes["down"].Name+" failed")
	waitForEvent(t, ns, gone.Name, berthv1alpha1.WorkloadEvicted, "(deleted)")
	// Well past the grace period of the node that recovered.
	time.Sleep(2 * time.Second)
	for _, wl := range []*berthv1alpha1.Workload{flaky, untouched} {
		cur := &berthv1alpha1.Workload{}
		if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(wl), cur); err != nil {
			t.Fatal(err)
		}
		if workload.IsEvicted(cur) {
			t.Errorf("%s was evicted: %+v", wl.Name, workload.FindCondition(cur, berthv1alpha1.WorkloadEvicted))
		}
	}
}

// setNodeReady plays the kubelet: the node's Ready condition is status.
func setNodeReady(t *testing.T, node *corev1.Node, status corev1.ConditionStatus) {
	t.Helper()
	waitFor(t, "node "+node.Name+" Ready "+string(status), func(ctx context.Context) error {
		cur := &corev1.Node{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(node), cur); err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now}}
		return server.Client.Status().Update(ctx, cur)
	})
}
