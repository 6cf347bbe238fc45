package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/util/shutdown"
)

// NamespaceReconciler has the workloads of a namespace looked at again when
// its labels change: a ClusterQueue's namespaceSelector may take them now,
// or no longer.
type NamespaceReconciler struct {
	client client.Client
	// workloads calls f with each Workload of a LocalQueue, read-only.
	workloads workloadsOfQueue
	notifier  *StatusNotifier
}

// SetupWithManager registers the reconciler with mgr, for label changes
// only.
func (r *NamespaceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("namespace").
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile requeues the workloads of the namespace's LocalQueues.
func (r *NamespaceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	lqs := &berthv1alpha1.LocalQueueList{}
	if err := r.client.List(ctx, lqs, client.InNamespace(req.Name)); err != nil {
		return ctrl.Result{}, err
	}
	for i := range lqs.Items {
		if err := requeueWorkloadsOfLocalQueue(r.workloads, r.notifier, req.Name, lqs.Items[i].Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}
