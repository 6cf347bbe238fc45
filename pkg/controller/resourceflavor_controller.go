package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/util/shutdown"
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

// SetupWithManager registers the reconciler with mgr.
func (r *ResourceFlavorReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("resourceflavor").For(&berthv1alpha1.ResourceFlavor{}).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile syncs one ResourceFlavor.
func (r *ResourceFlavorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gone := func() { r.cache.DeleteResourceFlavor(berthv1alpha1.ResourceFlavorReference(req.Name)) }
	if err := feed(ctx, r.client, req, &berthv1alpha1.ResourceFlavor{}, r.cache.AddOrUpdateResourceFlavor, gone); err != nil {
		return ctrl.Result{}, err
	}
	r.queues.QueueAllInadmissible()
	return ctrl.Result{}, r.notifier.clusterQueuesChanged(ctx, r.client, nil)
}
