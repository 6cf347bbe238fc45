package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/util/shutdown"
)

// ClusterQueueReconciler gives the engine each ClusterQueue's spec and
// writes the queue's status.
type ClusterQueueReconciler struct {
	client client.Client
	// workloads calls f with each Workload of a LocalQueue, read-only.
	workloads workloadsOfQueue
	cache     *cache.Cache
	queues    *queue.Manager
	notifier  *StatusNotifier
	pacer     *statusPacer

	mu sync.Mutex
	// fairSharing reports each queue's share in its status.
	fairSharing bool
	// features say which fields have effect; warnings tell of those that
	// have none.
	features Features
	warnings *unusedWarnings

	// synced is the generation of each queue the engine has, so that
	// status-only events do not wake the queue's set-aside workloads.
	synced map[string]int64
}

// SetupWithManager registers the reconciler with mgr. Besides the
// ClusterQueues' own events, it writes the status of the queues the
// notifier names, a second after they were named.
func (r *ClusterQueueReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("clusterqueue").For(&berthv1alpha1.ClusterQueue{}).
		WatchesRawSource(delayed(r.notifier.clusterQueues, statusDelay)).
		Complete(shutdown.UntilStopped(r))
}

// Reconcile syncs one ClusterQueue.
func (r *ClusterQueueReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.notifier.toldCQs.remove(berthv1alpha1.ClusterQueueReference(req.Name))
	cq := &berthv1alpha1.ClusterQueue{}
	if err := r.client.Get(ctx, req.NamespacedName, cq); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("clusterQueue", klog.KObj(cq)))
	terminating := !cq.DeletionTimestamp.IsZero()
	if !terminating && controllerutil.AddFinalizer(cq, berthv1alpha1.ResourceInUseFinalizer) {
		return ctrl.Result{}, r.client.Update(ctx, cq)
	}
	if err := r.syncEngine(ctx, cq, terminating); err != nil {
		return ctrl.Result{}, err
	}
	st, err := r.state(ctx, cq, terminating)
	if err != nil {
		return ctrl.Result{}, err
	}
	if terminating && st.reserving == 0 {
		r.forget(ctx, cq.Name)
		controllerutil.RemoveFinalizer(cq, berthv1alpha1.ResourceInUseFinalizer)
		return ctrl.Result{}, client.IgnoreNotFound(r.client.Update(ctx, cq))
	}
	oldConditions := slices.Clone(cq.Status.Conditions)
	if setClusterQueueStatus(cq, st) {
		if sameConditions(oldConditions, cq.Status.Conditions) {
			if wait := r.pacer.wait(cq.Name); wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		}
		return ctrl.Result{}, writeQueueStatus(ctx, r.client, cq, cq.Status)
	}
	return ctrl.Result{}, nil
}

// syncEngine hands a changed spec to the engine. A queue being deleted
// holds: it admits nothing new while its workloads finish.
func (r *ClusterQueueReconciler) syncEngine(ctx context.Context, cq *berthv1alpha1.ClusterQueue, terminating bool) error {
	gen := cq.Generation
	if terminating {
		gen = -gen
	}
	r.mu.Lock()
	changed := r.synced[cq.Name] != gen
	r.synced[cq.Name] = gen
	r.mu.Unlock()
	if !changed {
		return nil
	}
	engineCQ := cq
	if terminating {
		engineCQ = cq.DeepCopy()
		engineCQ.Spec.StopPolicy = berthv1alpha1.Hold
	}
	r.cache.AddOrUpdateClusterQueue(engineCQ)
	r.queues.AddOrUpdateClusterQueue(engineCQ)
	r.queues.QueueInadmissible(berthv1alpha1.ClusterQueueReference(cq.Name))
	// Its namespaceSelector or existence may change whether workloads of
	// its LocalQueues can be queued at all.
	return requeueWorkloadsOf(ctx, r.client, r.workloads, r.notifier, cq.Name)
}

func (r *ClusterQueueReconciler) forget(ctx context.Context, name string) {
	r.mu.Lock()
	delete(r.synced, name)
	r.pacer.forget(name)
	r.warnings.forget("", name)
	r.mu.Unlock()
	r.cache.DeleteClusterQueue(berthv1alpha1.ClusterQueueReference(name))
	metrics.ClusterQueueDeleted(name)
	r.queues.DeleteClusterQueue(berthv1alpha1.ClusterQueueReference(name))
	if err := requeueWorkloadsOf(ctx, r.client, r.workloads, r.notifier, name); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Requeueing the workloads of a deleted ClusterQueue", "clusterQueue", name)
	}
}

// state gathers what the status is computed from.
func (r *ClusterQueueReconciler) state(ctx context.Context, cq *berthv1alpha1.ClusterQueue, terminating bool) (queueState, error) {
	st := queueState{terminating: terminating, cohortCycle: r.cache.CohortCycle(berthv1alpha1.ClusterQueueReference(cq.Name)), unused: r.features.unusedInClusterQueue(cq)}
	r.warnings.tell(cq, st.unused)
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			err := r.client.Get(ctx, types.NamespacedName{Name: string(f.Name)}, &berthv1alpha1.ResourceFlavor{})
			if apierrors.IsNotFound(err) {
				st.missingFlavors = append(st.missingFlavors, string(f.Name))
			} else if err != nil {
				return st, err
			}
		}
	}
	for _, check := range workload.ChecksNamed(cq) {
		ac := &berthv1alpha1.AdmissionCheck{}
		err := r.client.Get(ctx, types.NamespacedName{Name: string(check)}, ac)
		if apierrors.IsNotFound(err) {
			st.checkReason, st.checkMessage = berthv1alpha1.ReasonAdmissionCheckNotFound, fmt.Sprintf("AdmissionCheck %s named in spec does not exist", check)
			break
		} else if err != nil {
			return st, err
		}
		if c := meta.FindStatusCondition(ac.Status.Conditions, berthv1alpha1.ConditionActive); c == nil || c.Status != metav1.ConditionTrue {
			why := "its controller has not said it is active"
			if c != nil {
				why = c.Message
			}
			st.checkReason, st.checkMessage = berthv1alpha1.ReasonAdmissionCheckInactive, fmt.Sprintf("AdmissionCheck %s is not active: %s", check, why)
			break
		}
	}
	name := berthv1alpha1.ClusterQueueReference(cq.Name)
	usage, borrowed, n := r.cache.ClusterQueueUsage(name)
	st.usage, st.borrowed = usage, borrowed
	if r.fairSharing {
		share := r.cache.WeightedShare(name)
		st.share = &share
	}
	active, inadmissible := r.queues.PendingCounts(name)
	st.pending = int32(active + inadmissible)
	// Without admission checks quota is reserved and the workload
	// admitted in one write; with them, admission follows the checks.
	st.reserving, st.admitted = int32(n), int32(r.cache.AdmittedCount(name))
	setQueueMetrics(cq, active, inadmissible, n, usage, r.cache.ReservedUsage(name))
	setCohortMetrics(r.cache.CohortsAbove(name))
	return st, nil
}

// setQueueMetrics sets the gauges of a ClusterQueue: its waiting and
// admitted workloads, and per flavor and resource its nominal quota and
// what is in use, in the resource's unit (cores for cpu).
func setQueueMetrics(cq *berthv1alpha1.ClusterQueue, active, inadmissible, admitted int, usage, reserved resources.Usage) {
	metrics.SetClusterQueueLabels(cq.Name, cq.Labels)
	metrics.PendingWorkloads.WithLabelValues(metrics.CQ(cq.Name, "active")...).Set(float64(active))
	metrics.PendingWorkloads.WithLabelValues(metrics.CQ(cq.Name, "inadmissible")...).Set(float64(inadmissible))
	metrics.AdmittedActiveWorkloads.WithLabelValues(metrics.CQ(cq.Name)...).Set(float64(admitted))
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				fr := resources.FlavorResource{Flavor: f.Name, Resource: r.Name}
				labels := metrics.CQ(cq.Name, string(f.Name), string(r.Name))
				metrics.ClusterQueueNominalQuota.WithLabelValues(labels...).Set(r.NominalQuota.AsApproximateFloat64())
				metrics.ClusterQueueResourceUsage.WithLabelValues(labels...).Set(amount(r.Name, usage[fr]))
				metrics.ClusterQueueResourceReservation.WithLabelValues(labels...).Set(amount(r.Name, reserved[fr]))
			}
		}
	}
}

// setCohortMetrics sets the gauges of the cohorts above a ClusterQueue.
func setCohortMetrics(cohorts []cache.CohortUsage) {
	for _, c := range cohorts {
		for fr, q := range c.Quota {
			metrics.CohortSubtreeQuota.WithLabelValues(string(c.Name), string(fr.Flavor), string(fr.Resource)).Set(amount(fr.Resource, q))
			metrics.CohortResourceUsage.WithLabelValues(string(c.Name), string(fr.Flavor), string(fr.Resource)).Set(amount(fr.Resource, c.Usage[fr]))
		}
	}
}

// amount is a value of the engine's in the resource's unit (cores for
// cpu).
func amount(name corev1.ResourceName, v int64) float64 {
	q := resources.Quantity(name, v)
	return q.AsApproximateFloat64()
}

// requeueWorkloadsOf asks for the workloads of every LocalQueue of a
// ClusterQueue to be looked at again.
func requeueWorkloadsOf(ctx context.Context, c client.Reader, workloads workloadsOfQueue, n *StatusNotifier, clusterQueue string) error {
	lqs := &berthv1alpha1.LocalQueueList{}
	if err := c.List(ctx, lqs, client.MatchingFields{LocalQueueClusterQueueKey: clusterQueue}); err != nil {
		return err
	}
	for i := range lqs.Items {
		if err := requeueWorkloadsOfLocalQueue(workloads, n, lqs.Items[i].Namespace, lqs.Items[i].Name); err != nil {
			return err
		}
	}
	return nil
}

func requeueWorkloadsOfLocalQueue(workloads workloadsOfQueue, n *StatusNotifier, ns, name string) error {
	err := workloads(ns, name, func(wl *berthv1alpha1.Workload) {
		n.RequeueWorkload(client.ObjectKeyFromObject(wl))
	})
	if err != nil {
		return err
	}
	n.LocalQueueChanged(types.NamespacedName{Namespace: ns, Name: name})
	return nil
}
