package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/util/shutdown"
)

// CohortReconciler gives the engine each Cohort object. A cohort that
// appears, moves or goes changes what every queue under it may borrow, and
// can close or break a cycle of parentName links, which makes queues
// inactive or active: every ClusterQueue's status is looked at again.
type CohortReconciler struct {
	client   client.Client
	cache    *cache.Cache
	queues   *queue.Manager
	notifier *StatusNotifier
	features Features
	warnings *unusedWarnings
}

// SetupWithManager registers the reconciler with mgr.
func (r *CohortReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("cohort").For(&berthv1alpha1.Cohort{}).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile syncs one Cohort.
func (r *CohortReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	set := func(cohort *berthv1alpha1.Cohort) {
		r.cache.AddOrUpdateCohort(cohort)
		r.queues.AddOrUpdateCohort(cohort)
		r.warnings.tell(cohort, r.features.unusedInCohort(cohort))
	}
	gone := func() {
		r.warnings.forget("", req.Name)
		metrics.CohortDeleted(req.Name)
		r.cache.DeleteCohort(berthv1alpha1.CohortReference(req.Name))
		r.queues.DeleteCohort(berthv1alpha1.CohortReference(req.Name))
	}
	if err := feed(ctx, r.client, req, &berthv1alpha1.Cohort{}, set, gone); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.notifier.clusterQueuesChanged(ctx, r.client, nil)
}
