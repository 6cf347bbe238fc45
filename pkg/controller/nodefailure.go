package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/util/shutdown"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// NodeFailureReconciler evicts the admitted workloads that ran pods on a
// node that failed (its Ready condition is not True, or it was deleted) for
// longer than the grace period: the whole workload goes back to its queue,
// rather than a gang running on with some of its pods lost.
//
// Which workloads a failed node ran is taken when the failure is first
// seen, from the pods bound to it, and kept in memory until the node is
// ready again or the grace period is over: once a node is deleted its pods
// go too (the pod garbage collector removes them), and with them the only
// record of what ran there. A controller that restarts during the grace
// period of a deleted node forgets it; one that is not ready is seen again
// from its pods.
type NodeFailureReconciler struct {
	client   client.Client
	writer   workloadwriter.Writer
	recorder events.EventRecorder
	grace    time.Duration

	mu     sync.Mutex
	failed map[string]*nodeFailure
}

// nodeFailure is a failed node: since when, and the workloads whose pods
// it ran then, by key.
type nodeFailure struct {
	since     time.Time
	why       string
	workloads map[types.NamespacedName][]string
}

// SetupWithManager registers the reconciler with mgr.
func (r *NodeFailureReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("nodefailure").For(&corev1.Node{}).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile looks at one node.
func (r *NodeFailureReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	err := r.client.Get(ctx, req.NamespacedName, node)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	since, why := time.Now(), "deleted"
	if err == nil {
		ready := nodeReady(node)
		if ready == nil || ready.Status == corev1.ConditionTrue {
			r.forget(node.Name)
			return ctrl.Result{}, nil
		}
		since, why = ready.LastTransitionTime.Time, fmt.Sprintf("Ready is %s (%s)", ready.Status, ready.Reason)
	}
	f, err := r.failure(ctx, req.Name, since, why, apierrors.IsNotFound(err))
	if err != nil || f == nil {
		return ctrl.Result{}, err
	}
	if left := r.grace - time.Since(f.since); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	for key, pods := range f.workloads {
		if err := r.evict(ctx, key, req.Name, f, pods); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.forget(req.Name)
	return ctrl.Result{}, nil
}

// nodeReady is a node's Ready condition, nil if it has none yet (a node
// just registered is not failed).
func nodeReady(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// failure is what is known of a failed node: recorded now, from the pods
// bound to it, if it was not already; nil if it runs no pod of Berth's. A
// deleted node's time is when its deletion was first seen.
func (r *NodeFailureReconciler) failure(ctx context.Context, node string, since time.Time, why string, deleted bool) (*nodeFailure, error) {
	r.mu.Lock()
	f := r.failed[node]
	r.mu.Unlock()
	if f != nil && (deleted || f.since.Equal(since)) {
		return f, nil
	}
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.MatchingFields{PodNodeKey: node}); err != nil {
		return nil, err
	}
	f = &nodeFailure{since: since, why: why, workloads: map[types.NamespacedName][]string{}}
	for _, p := range pods.Items {
		name := p.Labels[berthv1alpha1.WorkloadLabel]
		if name == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: name}
		f.workloads[key] = append(f.workloads[key], p.Name)
	}
	if len(f.workloads) == 0 {
		return nil, nil
	}
	ctrl.LoggerFrom(ctx).V(2).Info("A node that runs Berth's pods failed", "node", node, "since", since, "why", why, "workloads", len(f.workloads))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed[node] = f
	return f, nil
}

func (r *NodeFailureReconciler) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failed, node)
}

// evict evicts the workload with key if it still runs the admission that
// had pods on the failed node.
func (r *NodeFailureReconciler) evict(ctx context.Context, key types.NamespacedName, node string, f *nodeFailure, pods []string) error {
	wl := &berthv1alpha1.Workload{}
	if err := r.client.Get(ctx, key, wl); err != nil {
		return client.IgnoreNotFound(err)
	}
	admitted := workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted)
	if !workload.IsAdmitted(wl) || workload.IsEvicted(wl) || workload.IsFinished(wl) || admitted.LastTransitionTime.After(f.since) {
		return nil
	}
	slices.Sort(pods)
	shown := pods
	if len(shown) > 5 {
		shown = shown[:5]
	}
	msg := fmt.Sprintf("Node %s failed at %s (%s) and stayed so for %s (nodeFailures.gracePeriod); it ran %d of the workload's pods (%s%s): the whole workload is requeued, so that it does not run in part",
		node, f.since.UTC().Format(time.RFC3339), f.why, r.grace, len(pods), strings.Join(shown, ", "), more(len(pods)-len(shown)))
	ctrl.LoggerFrom(ctx).V(2).Info("Evicting a workload that ran pods on a failed node", "node", node, "workload", key)
	if _, err := workloadwriter.Apply(ctx, r.writer, wl, workload.Evict(berthv1alpha1.ReasonNodeFailures, msg)); err != nil {
		return err
	}
	cq := workload.ClusterQueueOf(wl)
	r.recorder.Eventf(wl, nil, corev1.EventTypeWarning, berthv1alpha1.WorkloadEvicted, "Evict", "Evicted from ClusterQueue %s (%s): %s", cq, berthv1alpha1.ReasonNodeFailures, msg)
	metrics.EvictedWorkloads.WithLabelValues(metrics.CQ(string(cq), berthv1alpha1.ReasonNodeFailures)...).Inc()
	return nil
}

// more says how many were left out of a list, if any.
func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" and %d more", n)
}
