package controller

import (
	"context"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/util/shutdown"
)

// AdmissionCheckReconciler gives the engine whether each AdmissionCheck is
// active: a ClusterQueue that names a missing or inactive check reserves
// no quota, and says why in its Active condition. Whether a check is
// active is its controller's to say (for Berth's own, package
// provisioning).
type AdmissionCheckReconciler struct {
	client   client.Client
	cache    *cache.Cache
	queues   *queue.Manager
	notifier *StatusNotifier
}

// SetupWithManager registers the reconciler with mgr.
func (r *AdmissionCheckReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("admissioncheck").For(&berthv1alpha1.AdmissionCheck{}).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile syncs one AdmissionCheck.
func (r *AdmissionCheckReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := berthv1alpha1.AdmissionCheckReference(req.Name)
	gone := func() { r.cache.DeleteAdmissionCheck(name) }
	if err := feed(ctx, r.client, req, &berthv1alpha1.AdmissionCheck{}, r.cache.AddOrUpdateAdmissionCheck, gone); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.notifier.clusterQueuesChanged(ctx, r.client, func(cq *berthv1alpha1.ClusterQueue) bool {
		if !slices.Contains(workload.ChecksNamed(cq), name) {
			return false
		}
		r.queues.QueueInadmissible(berthv1alpha1.ClusterQueueReference(cq.Name))
		return true
	})
}
