package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/util/shutdown"
)

// LocalQueueReconciler writes LocalQueues' status, and has the workloads
// of a LocalQueue looked at again when the queue appears, changes or goes.
type LocalQueueReconciler struct {
	client client.Client
	// workloads calls f with each Workload of a LocalQueue, read-only.
	workloads workloadsOfQueue
	// queues keep the LocalQueues' usage for admission fair sharing.
	queues   *queue.Manager
	notifier *StatusNotifier
	pacer    *statusPacer

	mu sync.Mutex
	// seen is the generation of each LocalQueue last handled, so that only
	// spec changes requeue its workloads.
	seen map[types.NamespacedName]int64
	// features say which fields have effect; warnings tell of those that
	// have none.
	features Features
	warnings *unusedWarnings
}

// SetupWithManager registers the reconciler with mgr. Besides the
// LocalQueues' own events, it writes the status of the queues the notifier
// names, a second after they were named.
func (r *LocalQueueReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("localqueue").For(&berthv1alpha1.LocalQueue{}).
		WatchesRawSource(delayed(r.notifier.localQueues, statusDelay)).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile syncs one LocalQueue.
func (r *LocalQueueReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.notifier.toldLQs.remove(req.NamespacedName)
	lq := &berthv1alpha1.LocalQueue{}
	err := r.client.Get(ctx, req.NamespacedName, lq)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	gen := lq.Generation
	if apierrors.IsNotFound(err) {
		gen = 0
	}
	r.mu.Lock()
	changed := r.seen[req.NamespacedName] != gen
	r.seen[req.NamespacedName] = gen
	if gen == 0 {
		delete(r.seen, req.NamespacedName)
		r.pacer.forget(req.String())
		r.warnings.forget(req.Namespace, req.Name)
	}
	r.mu.Unlock()
	if changed {
		if err := requeueWorkloadsOfLocalQueue(r.workloads, r.notifier, req.Namespace, req.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	if gen == 0 {
		r.queues.DeleteLocalQueue(req.String())
		metrics.LocalQueueDeleted(req.Namespace, req.Name)
		return ctrl.Result{}, nil
	}
	r.queues.AddOrUpdateLocalQueue(lq)
	r.notifier.ClusterQueueChanged(lq.Spec.ClusterQueue)
	active, err := r.active(ctx, lq)
	if err != nil {
		return ctrl.Result{}, err
	}
	unused := r.features.unusedInLocalQueue(lq)
	r.warnings.tell(lq, unused)
	conds := slices.Clone(lq.Status.Conditions)
	setActiveCondition(&conds, lq.Generation, active)
	setUnusedCondition(&conds, lq.Generation, unused)
	activeChanged := !sameConditions(lq.Status.Conditions, conds)
	if !activeChanged {
		// Only the counts can have changed, and they wait for the queue's
		// turn to write: counting its workloads on every workload event
		// was a tenth of the controller's CPU in the perf baseline.
		if wait := r.pacer.due(req.String()); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	orig := lq.DeepCopy()
	if err := r.setStatus(lq, active, unused); err != nil || equality.Semantic.DeepEqual(orig.Status, lq.Status) {
		return ctrl.Result{}, err
	}
	if activeChanged {
		r.pacer.wrote(req.String())
	} else if wait := r.pacer.wait(req.String()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return ctrl.Result{}, writeQueueStatus(ctx, r.client, lq, lq.Status)
}

func (r *LocalQueueReconciler) setStatus(lq *berthv1alpha1.LocalQueue, active metav1.Condition, unused []unusedSetting) error {
	var pending, reserving, admitted int32
	var admissions []*berthv1alpha1.Admission
	inadmissible := 0
	err := r.workloads(lq.Namespace, lq.Name, func(wl *berthv1alpha1.Workload) {
		switch {
		case workload.IsFinished(wl):
		case workload.HasQuotaReservation(wl):
			reserving++
			if workload.IsAdmitted(wl) {
				admitted++
			}
			admissions = append(admissions, wl.Status.Admission)
		default:
			pending++
			if r.queues.SetAside(workload.Key(wl), lq.Spec.ClusterQueue) {
				inadmissible++
			}
		}
	})
	if err != nil {
		return err
	}
	lq.Status.PendingWorkloads, lq.Status.ReservingWorkloads, lq.Status.AdmittedWorkloads = pending, reserving, admitted
	lq.Status.FlavorsUsage = localQueueUsage(admissions)
	lq.Status.FairSharing = r.queues.LocalQueueFairSharing(lq.Namespace + "/" + lq.Name)
	st := metrics.LocalQueueState{Active: int(pending) - inadmissible, Inadmissible: inadmissible, Admitted: int(admitted), Usage: map[string]map[string]float64{}}
	for _, f := range lq.Status.FlavorsUsage {
		st.Usage[string(f.Name)] = map[string]float64{}
		for _, u := range f.Resources {
			st.Usage[string(f.Name)][string(u.Name)] = u.Total.AsApproximateFloat64()
		}
	}
	metrics.SetLocalQueue(lq.Namespace, lq.Name, lq.Labels, st)
	setActiveCondition(&lq.Status.Conditions, lq.Generation, active)
	setUnusedCondition(&lq.Status.Conditions, lq.Generation, unused)
	return nil
}

// active is the LocalQueue's Active condition: its own stop policy, then
// whether its ClusterQueue exists and is active.
func (r *LocalQueueReconciler) active(ctx context.Context, lq *berthv1alpha1.LocalQueue) (metav1.Condition, error) {
	if lq.Spec.StopPolicy != "" && lq.Spec.StopPolicy != berthv1alpha1.None {
		return inactive(berthv1alpha1.ReasonStopped, fmt.Sprintf("The LocalQueue is stopped (stopPolicy %s)", lq.Spec.StopPolicy)), nil
	}
	cq := &berthv1alpha1.ClusterQueue{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: string(lq.Spec.ClusterQueue)}, cq); err != nil {
		if apierrors.IsNotFound(err) {
			return inactive(berthv1alpha1.ReasonClusterQueueNotFound, fmt.Sprintf("ClusterQueue %s does not exist", lq.Spec.ClusterQueue)), nil
		}
		return metav1.Condition{}, err
	}
	if c := meta.FindStatusCondition(cq.Status.Conditions, berthv1alpha1.ConditionActive); c != nil && c.Status == metav1.ConditionFalse {
		return inactive(berthv1alpha1.ReasonClusterQueueInactive, fmt.Sprintf("ClusterQueue %s is not active: %s", cq.Name, c.Message)), nil
	}
	return metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonReady, Message: "Can submit new workloads to ClusterQueue " + cq.Name}, nil
}
