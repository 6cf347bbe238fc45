package core

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/cache"
	"github.com/berth-dev/berth/pkg/queue"
	"github.com/berth-dev/berth/pkg/workload"
)

// ResourceFlavorReconciler gives the engine each ResourceFlavor. A flavor
// that appears or changes can make queues active or let set-aside
// workloads fit, so every queue is looked at again.
type ResourceFlavorReconciler struct {
	client   client.Client
	cache    *cache.Cache
	queues   *queue.Manager
	notifier *StatusNotifier
}

// Reconcile syncs one ResourceFlavor.
func (r *ResourceFlavorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rf := &berthv1alpha1.ResourceFlavor{}
	err := r.client.Get(ctx, req.NamespacedName, rf)
	switch {
	case apierrors.IsNotFound(err):
		r.cache.DeleteResourceFlavor(berthv1alpha1.ResourceFlavorReference(req.Name))
	case err != nil:
		return ctrl.Result{}, err
	default:
		r.cache.AddOrUpdateResourceFlavor(rf)
	}
	r.queues.QueueAllInadmissible()
	cqs := &berthv1alpha1.ClusterQueueList{}
	if err := r.client.List(ctx, cqs); err != nil {
		return ctrl.Result{}, err
	}
	for i := range cqs.Items {
		r.notifier.ClusterQueueChanged(berthv1alpha1.ClusterQueueReference(cqs.Items[i].Name))
	}
	return ctrl.Result{}, nil
}

// CohortReconciler gives the engine each Cohort object.
type CohortReconciler struct {
	client client.Client
	cache  *cache.Cache
	queues *queue.Manager
}

// Reconcile syncs one Cohort.
func (r *CohortReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cohort := &berthv1alpha1.Cohort{}
	err := r.client.Get(ctx, req.NamespacedName, cohort)
	switch {
	case apierrors.IsNotFound(err):
		r.cache.DeleteCohort(berthv1alpha1.CohortReference(req.Name))
		r.queues.DeleteCohort(berthv1alpha1.CohortReference(req.Name))
	case err != nil:
		return ctrl.Result{}, err
	default:
		r.cache.AddOrUpdateCohort(cohort)
		r.queues.AddOrUpdateCohort(cohort)
	}
	return ctrl.Result{}, nil
}

// WorkloadPriorityClassReconciler sets the priority of the unfinished
// workloads of a WorkloadPriorityClass to its value, so that a changed
// value re-orders the waiting workloads at once.
type WorkloadPriorityClassReconciler struct {
	client client.Client
}

// Reconcile syncs the workloads of one WorkloadPriorityClass.
func (r *WorkloadPriorityClassReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wpc := &berthv1alpha1.WorkloadPriorityClass{}
	if err := r.client.Get(ctx, req.NamespacedName, wpc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	wls := &berthv1alpha1.WorkloadList{}
	if err := r.client.List(ctx, wls, client.MatchingFields{WorkloadPriorityClassKey: wpc.Name}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range wls.Items {
		wl := &wls.Items[i]
		if workload.IsFinished(wl) || (wl.Spec.Priority != nil && *wl.Spec.Priority == wpc.Value) {
			continue
		}
		if err := setPriority(ctx, r.client, wl, wpc.Value); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}
