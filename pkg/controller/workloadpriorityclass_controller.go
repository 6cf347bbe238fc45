package controller

import (
	"context"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/util/shutdown"
)

// WorkloadPriorityClassReconciler sets the priority of the unfinished
// workloads of a WorkloadPriorityClass to its value, so that a changed
// value re-orders the waiting workloads at once, and has the waiting ones
// looked at again when the class appears or goes: a workload that waited
// for its class to exist may be queued now.
type WorkloadPriorityClassReconciler struct {
	client   client.Client
	notifier *StatusNotifier
}

// SetupWithManager registers the reconciler with mgr: only a class's
// value, its spec, matters.
func (r *WorkloadPriorityClassReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("workloadpriorityclass").
		For(&berthv1alpha1.WorkloadPriorityClass{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile syncs the workloads of one WorkloadPriorityClass.
func (r *WorkloadPriorityClassReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wpc := &berthv1alpha1.WorkloadPriorityClass{}
	err := r.client.Get(ctx, req.NamespacedName, wpc)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	exists := err == nil
	wls := &berthv1alpha1.WorkloadList{}
	if err := r.client.List(ctx, wls, client.MatchingFields{WorkloadPriorityClassKey: req.Name}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range wls.Items {
		wl := &wls.Items[i]
		if workload.IsFinished(wl) {
			continue
		}
		if !exists || (wl.Spec.Priority != nil && *wl.Spec.Priority == wpc.Value) {
			if !workload.HasQuotaReservation(wl) {
				r.notifier.RequeueWorkload(client.ObjectKeyFromObject(wl))
			}
			continue
		}
		if err := setPriority(ctx, r.client, wl, wpc.Value); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// setPriority writes a workload's resolved priority, a field of its spec,
// if wl is still the stored version.
func setPriority(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload, value int32) error {
	patched := wl.DeepCopy()
	patched.Spec.Priority = ptr.To(value)
	return c.Patch(ctx, patched, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
}
