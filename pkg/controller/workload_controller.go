package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/util/shutdown"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// WorkloadReconciler keeps the engine's cache and queues in step with
// Workloads: a workload holding quota is in the cache, a pending one is in
// its ClusterQueue's queue, and one that cannot be queued says why. It also
// evicts admitted workloads that must stop (deactivated, queue drained,
// pods not ready in time) and requeues evicted workloads that no job
// integration owns.
type WorkloadReconciler struct {
	client client.Client
	// stored returns the informer's own Workload (QueueWorkloads.Get);
	// without it, the client reads the cache without a copy.
	stored           func(types.NamespacedName) (*berthv1alpha1.Workload, error)
	writer           workloadwriter.Writer
	cache            *cache.Cache
	queues           *queue.Manager
	pending          pendingMessages
	recorder         events.EventRecorder
	podsReadyTimeout time.Duration
	recoveryTimeout  time.Duration
	backoff          workload.Backoff
	retention        Retention
	// integrated reports whether a job integration runs the workloads of
	// an owner of this kind: it stops their pods and requeues them.
	integrated  func(metav1.OwnerReference) bool
	concurrency int
	// status tells the queue status reconcilers that a queue's counts may
	// have changed, and asks for workloads to be reconciled again.
	status *StatusNotifier
}

// pendingMessages is what the Workload reconciler needs of the writer of
// why workloads wait (applier.WaitReasons).
type pendingMessages interface {
	// Forget drops what is known of a workload that no longer waits.
	Forget(key types.NamespacedName)
}

// SetupWithManager registers the reconciler with mgr. Besides the
// Workloads' own events, it reconciles the workloads that the notifier
// asks for (those of a queue, class or namespace that appeared or changed)
// and those whose pods ended: an evicted workload's quota is released only
// when none is left.
func (r *WorkloadReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("workload").For(&berthv1alpha1.Workload{}).
		// A deleted Workload is gone when it is reconciled: its LocalQueue
		// is told from the event, which still holds it.
		Watches(&berthv1alpha1.Workload{}, handler.Funcs{DeleteFunc: r.deleted}).
		WatchesRawSource(delayed(r.status.workloads, 0)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(workloadOfPod), builder.WithPredicates(podEnded)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.concurrency, 1)}).
		Complete(shutdown.UntilStopped(r))
}

// deleted has the status of a deleted Workload's LocalQueue written again.
func (r *WorkloadReconciler) deleted(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if wl, ok := e.Object.(*berthv1alpha1.Workload); ok {
		r.status.WorkloadChanged(wl)
	}
}

// Reconcile brings the engine's view of one Workload up to date.
func (r *WorkloadReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The cache's own object, not a copy: copying every Workload on every
	// event was an eighth of the controller's allocations. Whatever writes
	// changes a copy (TestWorkloadReconcilerLeavesTheCachedObjectAlone).
	wl, err := r.get(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return r.forgetOnceStopped(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	// The logger already names the workload (controller-runtime's
	// "Workload" key).
	r.status.WorkloadChanged(wl)

	switch {
	case workload.IsFinished(wl):
		r.forget(workload.Key(wl))
		return r.expireFinished(ctx, wl)
	case !wl.DeletionTimestamp.IsZero():
		return r.forgetOnceStopped(ctx, req.NamespacedName)
	case orphaned(wl):
		return r.stopOrphan(ctx, wl)
	case workload.HasQuotaReservation(wl):
		return r.reconcileReserved(ctx, wl)
	default:
		return r.reconcilePending(ctx, wl)
	}
}

// get reads the Workload of key from the cache, without a copy.
func (r *WorkloadReconciler) get(ctx context.Context, key types.NamespacedName) (*berthv1alpha1.Workload, error) {
	if r.stored != nil {
		return r.stored(key)
	}
	wl := &berthv1alpha1.Workload{}
	return wl, r.client.Get(ctx, key, wl, client.UnsafeDisableDeepCopy)
}

// forgetOnceStopped forgets a deleted workload once none of its pods is
// left on a node: deleting a running job deletes its Workload and its pods
// together, and the pods may take their grace period to stop. Until then
// the engine keeps counting the quota the workload held.
func (r *WorkloadReconciler) forgetOnceStopped(ctx context.Context, key types.NamespacedName) (ctrl.Result, error) {
	if r.cache.HoldsQuota(key.String()) {
		if n, err := jobframework.LivePods(ctx, r.client, key); err != nil || n > 0 {
			return ctrl.Result{RequeueAfter: podsGonePoll}, err
		}
	}
	r.forget(key.String())
	return ctrl.Result{}, nil
}

// forget drops a workload from the engine, wakes the workloads waiting for
// the quota it held, and has the statuses of the ClusterQueues that counted
// it written again: a deleted Workload's last event may be this one.
func (r *WorkloadReconciler) forget(key string) {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		r.pending.Forget(types.NamespacedName{Namespace: ns, Name: name})
	}
	if cq := r.queues.DeleteWorkload(key); cq != "" {
		r.status.ClusterQueueChanged(cq)
	}
	if cq := r.cache.DeleteWorkload(key); cq != "" {
		r.status.ClusterQueueChanged(cq)
		r.queues.QueueInadmissible(cq)
	}
}

// orphaned reports whether wl is the Workload of a job that was deleted
// while its dependents were kept (kubectl delete --cascade=orphan): it was
// made for a job (it carries the job's UID) and no longer has an owner.
func orphaned(wl *berthv1alpha1.Workload) bool {
	return wl.Labels[berthv1alpha1.JobUIDLabel] != "" && len(wl.OwnerReferences) == 0
}

// stopOrphan ends the Workload of a job deleted with its pods kept: those
// pods were admitted as the job's and nothing accounts for them once it is
// gone. Berth stops them (it suspends a Job that the deleted job made and
// kept, a JobSet's, and deletes the other pods), and deletes the Workload
// once none is left on a node; until then it keeps the quota.
func (r *WorkloadReconciler) stopOrphan(ctx context.Context, wl *berthv1alpha1.Workload) (ctrl.Result, error) {
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(wl.Namespace), client.MatchingLabels{berthv1alpha1.WorkloadLabel: wl.Name}); err != nil {
		return ctrl.Result{}, err
	}
	live, stopping := 0, 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		live++
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		stopping++
		if err := r.stopOrphanedPod(ctx, p); err != nil {
			return ctrl.Result{}, err
		}
	}
	if stopping > 0 {
		r.recorder.Eventf(wl, nil, corev1.EventTypeWarning, EventOrphaned, "Stop",
			"The workload's job was deleted and its pods kept (--cascade=orphan): Berth stops the %d pods it admitted; the quota is held until they are gone", stopping)
	}
	if live > 0 {
		return ctrl.Result{RequeueAfter: podsGonePoll}, nil
	}
	pre := client.Preconditions{UID: &wl.UID, ResourceVersion: &wl.ResourceVersion}
	return ctrl.Result{}, client.IgnoreNotFound(r.client.Delete(ctx, wl, pre))
}

// stopOrphanedPod stops a pod of an orphaned Workload: the Job that still
// controls it is suspended, which deletes its pods and makes no more, or,
// when a JobSet controls that Job (a TrainJob's, kept), the JobSet, which
// would otherwise start its Jobs again; another pod is deleted.
func (r *WorkloadReconciler) stopOrphanedPod(ctx context.Context, p *corev1.Pod) error {
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Job" && ref.APIVersion == batchv1.SchemeGroupVersion.String() {
		job := &batchv1.Job{}
		err := r.client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}, job)
		if err == nil && job.UID == ref.UID {
			if set := metav1.GetControllerOf(job); set != nil && set.Kind == "JobSet" && set.APIVersion == jobSetAPIVersion {
				switch err := r.suspendJobSet(ctx, job.Namespace, set); {
				case err == nil:
					return nil
				case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
					return err
				}
				// Gone, or another of that name: the Job is its own.
			}
			if ptr.Deref(job.Spec.Suspend, false) {
				return nil
			}
			patched := job.DeepCopy()
			patched.Spec.Suspend = ptr.To(true)
			return client.IgnoreNotFound(r.client.Patch(ctx, patched, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{})))
		}
		if client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return client.IgnoreNotFound(r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID}))
}

// jobSetAPIVersion is the API version of the JobSets whose Jobs Berth
// stops through their JobSet.
const jobSetAPIVersion = "jobset.x-k8s.io/v1alpha2"

// suspendJobSet suspends the JobSet ref names in ns, if it is still that
// one (its UID): the JobSet controller then suspends its Jobs and keeps
// them suspended.
func (r *WorkloadReconciler) suspendJobSet(ctx context.Context, ns string, ref *metav1.OwnerReference) error {
	set := &unstructured.Unstructured{}
	set.SetAPIVersion(ref.APIVersion)
	set.SetKind(ref.Kind)
	set.SetNamespace(ns)
	set.SetName(ref.Name)
	patch := fmt.Sprintf(`{"metadata":{"uid":%q},"spec":{"suspend":true}}`, ref.UID)
	return r.client.Patch(ctx, set, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// EventOrphaned is the Warning on a Workload whose job was deleted while
// its pods were kept.
const EventOrphaned = "Orphaned"

// pendingResync is how often a pending workload is handed to the queues
// again. It costs little when the queues hold its version, and it bounds
// how long a workload can wait should an event about it ever be missed.
const pendingResync = 5 * time.Minute

// missingClassRetry is how often a workload whose priority class does not
// exist looks for it again.
const missingClassRetry = 30 * time.Second

// unknownQueueRetry is how soon a workload whose ClusterQueue exists but
// has not reached the scheduler yet (its reconciler has not run) is tried
// again.
const unknownQueueRetry = time.Second

func (r *WorkloadReconciler) reconcilePending(ctx context.Context, wl *berthv1alpha1.Workload) (ctrl.Result, error) {
	key := workload.Key(wl)
	log := ctrl.LoggerFrom(ctx)
	if r.cache.AssumedSince(wl) {
		// The scheduler has just admitted it, from this version or a
		// later one, and the informers are behind.
		log.V(3).Info("Skipping an older version of an assumed workload")
		return ctrl.Result{}, nil
	}
	if cq := r.cache.DeleteWorkload(key); cq != "" {
		// It held quota until now: an eviction completed.
		log.V(2).Info("Released the quota of a requeued workload", "clusterQueue", cq)
		r.status.ClusterQueueChanged(cq)
		r.queues.QueueInadmissible(cq)
	}
	if done, err := r.holdInactive(ctx, wl); done || err != nil {
		r.queues.DeleteWorkload(key)
		if err != nil {
			return ctrl.Result{}, err
		}
		return r.expireDeactivated(ctx, wl, workload.DeactivatedByBerth(wl))
	}
	if at, waiting := workload.WaitingForBackoff(wl, time.Now()); waiting {
		r.queues.DeleteWorkload(key)
		return ctrl.Result{RequeueAfter: time.Until(at)}, nil
	}
	if changed, msg, err := r.resolvePriority(ctx, wl); err != nil || changed {
		return ctrl.Result{}, err
	} else if msg != "" {
		r.queues.DeleteWorkload(key)
		// A WorkloadPriorityClass's creation brings it back; a
		// PriorityClass, which Berth does not watch, is looked for again.
		return ctrl.Result{RequeueAfter: missingClassRetry}, r.setInadmissible(ctx, wl, msg)
	}
	cq, msg, err := clusterQueueFor(ctx, r.client, wl)
	if err != nil {
		return ctrl.Result{}, err
	}
	if msg != "" {
		r.queues.DeleteWorkload(key)
		return ctrl.Result{}, r.setInadmissible(ctx, wl, msg)
	}
	if err := r.queues.AddOrUpdateWorkload(wl, cq); errors.Is(err, queue.ErrClusterQueueNotFound) {
		log.V(2).Info("ClusterQueue not known to the scheduler yet", "clusterQueue", cq)
		return ctrl.Result{RequeueAfter: unknownQueueRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: pendingResync}, nil
}

// setInadmissible says why a workload cannot be queued at all. It writes
// at once: this is rare and a person is probably waiting for it. The
// writer of reasons to wait forgets what it wrote before: once queued
// again, the workload's next reason replaces this one within a moment, not
// when that writer's last reason would have been due for a refresh.
func (r *WorkloadReconciler) setInadmissible(ctx context.Context, wl *berthv1alpha1.Workload, msg string) error {
	r.pending.Forget(client.ObjectKeyFromObject(wl))
	_, err := workloadwriter.Apply(ctx, r.writer, wl, workload.SetPending(berthv1alpha1.ReasonInadmissible, msg))
	return err
}

// resolvePriority sets spec.priority from the workload's
// WorkloadPriorityClass. It reports whether it wrote (a new event follows)
// or why the class cannot be resolved.
func (r *WorkloadReconciler) resolvePriority(ctx context.Context, wl *berthv1alpha1.Workload) (bool, string, error) {
	if ref := wl.Spec.PriorityClassRef; wl.Spec.PriorityClassName == "" && ref != nil && ref.Kind == berthv1alpha1.PriorityClassKind {
		return r.resolvePodPriority(ctx, wl, ref.Name)
	}
	if wl.Spec.PriorityClassName == "" {
		return false, "", nil
	}
	wpc := &berthv1alpha1.WorkloadPriorityClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: wl.Spec.PriorityClassName}, wpc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("WorkloadPriorityClass %s does not exist", wl.Spec.PriorityClassName), nil
		}
		return false, "", err
	}
	if wl.Spec.Priority != nil && *wl.Spec.Priority == wpc.Value {
		return false, "", nil
	}
	return true, "", setPriority(ctx, r.client, wl, wpc.Value)
}

// resolvePodPriority sets spec.priority from the PriorityClass of the
// workload's pods, once: a PriorityClass's value cannot change. It reports
// whether it wrote, or why the class cannot be resolved.
func (r *WorkloadReconciler) resolvePodPriority(ctx context.Context, wl *berthv1alpha1.Workload, class string) (bool, string, error) {
	if wl.Spec.Priority != nil {
		return false, "", nil
	}
	pc := &schedulingv1.PriorityClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: class}, pc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("PriorityClass %s, which its pods name, does not exist", class), nil
		}
		return false, "", err
	}
	return true, "", setPriority(ctx, r.client, wl, pc.Value)
}

func (r *WorkloadReconciler) reconcileReserved(ctx context.Context, wl *berthv1alpha1.Workload) (ctrl.Result, error) {
	r.pending.Forget(client.ObjectKeyFromObject(wl))
	r.queues.DeleteWorkload(workload.Key(wl))
	shrinks := r.cache.Shrinks(wl)
	r.cache.AddOrUpdateWorkload(wl)
	if shrinks {
		// An elastic job scaled down: what it gave back may admit others.
		r.status.ClusterQueueChanged(wl.Status.Admission.ClusterQueue)
		r.queues.QueueInadmissible(wl.Status.Admission.ClusterQueue)
	}
	if workload.IsEvicted(wl) {
		if r.runByIntegration(wl) {
			// The job integration stops the job, then requeues the workload.
			return ctrl.Result{}, nil
		}
		return r.requeue(ctx, wl)
	}
	if done, err := r.followChecks(ctx, wl); done || err != nil {
		return ctrl.Result{}, err
	}
	reason, msg, after, err := r.evictionReason(ctx, wl)
	if err != nil || reason == "" {
		return ctrl.Result{RequeueAfter: after}, err
	}
	if _, err := workloadwriter.Apply(ctx, r.writer, wl, workload.Evict(reason, msg)); err != nil {
		return ctrl.Result{}, err
	}
	r.recorder.Eventf(wl, nil, corev1.EventTypeNormal, berthv1alpha1.WorkloadEvicted, "Evict", "Evicted from ClusterQueue %s (%s): %s", workload.ClusterQueueOf(wl), reason, msg)
	metrics.EvictedWorkloads.WithLabelValues(metrics.CQ(string(wl.Status.Admission.ClusterQueue), reason)...).Inc()
	return ctrl.Result{}, nil
}

// followChecks acts on the admission checks of a workload holding quota:
// one that is Rejected or asks to Retry evicts it (the requeue then
// deactivates it or waits as the check says, see workload.NextRequeue);
// once all are Ready it is admitted. It reports whether it wrote.
func (r *WorkloadReconciler) followChecks(ctx context.Context, wl *berthv1alpha1.Workload) (bool, error) {
	if len(wl.Status.AdmissionChecks) == 0 {
		return false, nil
	}
	cq := wl.Status.Admission.ClusterQueue
	if c := workload.FailedCheck(wl); c != nil {
		msg := workload.CheckFailureMessage(c)
		if _, err := workloadwriter.Apply(ctx, r.writer, wl, workload.Evict(berthv1alpha1.ReasonAdmissionCheck, msg)); err != nil {
			return true, err
		}
		r.recorder.Eventf(wl, nil, corev1.EventTypeNormal, berthv1alpha1.WorkloadEvicted, "Evict", "Evicted from ClusterQueue %s (%s): %s", cq, berthv1alpha1.ReasonAdmissionCheck, msg)
		metrics.EvictedWorkloads.WithLabelValues(metrics.CQ(string(cq), berthv1alpha1.ReasonAdmissionCheck)...).Inc()
		return true, nil
	}
	if workload.IsAdmitted(wl) || !workload.ChecksReady(wl) {
		return false, nil
	}
	if _, err := workloadwriter.Apply(ctx, r.writer, wl, workload.AdmitChecked()); err != nil {
		return true, err
	}
	metrics.Admitted(string(cq), wl.Namespace, string(wl.Spec.QueueName), time.Since(workload.QueueTime(wl)))
	return true, nil
}

// runByIntegration reports whether a job integration runs the workload:
// the integration of its controlling owner, or, for a pod group's, which
// no one object controls, the pod integration.
func (r *WorkloadReconciler) runByIntegration(wl *berthv1alpha1.Workload) bool {
	if wl.Labels[berthv1alpha1.PodGroupNameLabel] != "" {
		return r.integrated(metav1.OwnerReference{APIVersion: "v1", Kind: "Pod"})
	}
	owner := metav1.GetControllerOf(wl)
	return owner != nil && r.integrated(*owner)
}

// evictionReason says why an admitted workload must stop, if it must; or
// after how long to look again, while its pods have time to become ready.
func (r *WorkloadReconciler) evictionReason(ctx context.Context, wl *berthv1alpha1.Workload) (string, string, time.Duration, error) {
	if !workload.IsActive(wl) {
		return berthv1alpha1.ReasonDeactivated, workload.DeactivatedMessage, 0, nil
	}
	cqName := wl.Status.Admission.ClusterQueue
	cq := &berthv1alpha1.ClusterQueue{}
	// Read only, as the LocalQueue below: the cache's own objects.
	if err := r.client.Get(ctx, types.NamespacedName{Name: string(cqName)}, cq, client.UnsafeDisableDeepCopy); client.IgnoreNotFound(err) != nil {
		return "", "", 0, err
	} else if err == nil && cq.Spec.StopPolicy == berthv1alpha1.HoldAndDrain {
		return berthv1alpha1.ReasonClusterQueueStopped, fmt.Sprintf("ClusterQueue %s is stopped with HoldAndDrain", cqName), 0, nil
	}
	lq := &berthv1alpha1.LocalQueue{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}, lq, client.UnsafeDisableDeepCopy); client.IgnoreNotFound(err) != nil {
		return "", "", 0, err
	} else if err == nil && lq.Spec.StopPolicy == berthv1alpha1.HoldAndDrain {
		return berthv1alpha1.ReasonLocalQueueStopped, fmt.Sprintf("LocalQueue %s is stopped with HoldAndDrain", lq.Name), 0, nil
	}
	now := time.Now()
	left, limited := workload.ExecutionTimeLeft(wl, now)
	limited = limited && workload.IsAdmitted(wl)
	if limited && left <= 0 {
		return berthv1alpha1.ReasonMaximumExecutionTimeExceeded, workload.ExecutionTimeExceededMessage(wl, now), 0, nil
	}
	reason, msg, after, err := r.podsReadyTimedOut(wl)
	if reason == "" && limited && (after == 0 || left < after) {
		after = left
	}
	return reason, msg, after, err
}

// podsReadyTimedOut says whether an admitted workload's pods took too long
// to be ready: since its admission, while they never were all ready
// (waitForPodsReady.timeout), or since one stopped being ready, once they
// were (recoveryTimeout).
func (r *WorkloadReconciler) podsReadyTimedOut(wl *berthv1alpha1.Workload) (string, string, time.Duration, error) {
	if r.podsReadyTimeout <= 0 || !workload.IsAdmitted(wl) || workload.IsConditionTrue(wl, berthv1alpha1.WorkloadPodsReady) {
		return "", "", 0, nil
	}
	if c := workload.FindCondition(wl, berthv1alpha1.WorkloadPodsReady); c != nil && c.Reason == berthv1alpha1.ReasonWaitForRecovery {
		if r.recoveryTimeout <= 0 {
			return "", "", 0, nil
		}
		if left := r.recoveryTimeout - time.Since(c.LastTransitionTime.Time); left > 0 {
			return "", "", left, nil
		}
		return berthv1alpha1.ReasonPodsReadyTimeout, fmt.Sprintf("The pods stopped being all ready at %s and were not all ready again within %s (waitForPodsReady.recoveryTimeout)",
			c.LastTransitionTime.UTC().Format(time.RFC3339), r.recoveryTimeout), 0, nil
	}
	admitted := workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted)
	if left := r.podsReadyTimeout - time.Since(admitted.LastTransitionTime.Time); left > 0 {
		return "", "", left, nil
	}
	return berthv1alpha1.ReasonPodsReadyTimeout,
		fmt.Sprintf("The pods were not all ready %s after admission (waitForPodsReady.timeout)", r.podsReadyTimeout), 0, nil
}

// requeue releases the quota of an evicted workload that no job
// integration runs, once none of its pods is left on a node.
func (r *WorkloadReconciler) requeue(ctx context.Context, wl *berthv1alpha1.Workload) (ctrl.Result, error) {
	if n, err := jobframework.LivePods(ctx, r.client, client.ObjectKeyFromObject(wl)); err != nil || n > 0 {
		// The pods' events bring it back; the poll is for a missed one.
		return ctrl.Result{RequeueAfter: podsGonePoll}, err
	}
	d := workload.NextRequeue(wl, r.backoff, time.Now())
	if written, err := workloadwriter.Requeue(ctx, r.client, r.writer, wl, d); err != nil || !written {
		return ctrl.Result{}, err
	}
	r.recorder.Eventf(wl, nil, corev1.EventTypeNormal, berthv1alpha1.WorkloadRequeued, "Requeue", "%s", workload.RequeueMessage(wl, d))
	return ctrl.Result{}, nil
}

// podsGonePoll is how often an evicted workload's pods are counted again
// while some are left.
const podsGonePoll = 2 * time.Second

// holdInactive keeps a deactivated workload out of the queues, saying why,
// and reports whether it did. A workload requeued past the backoff's limit,
// or that ran past its maximum execution time, says so in its Requeued
// condition; once a person sets spec.active to true again, it starts its
// backoff and its execution time over.
func (r *WorkloadReconciler) holdInactive(ctx context.Context, wl *berthv1alpha1.Workload) (bool, error) {
	limit := workload.DeactivatedByBerth(wl)
	switch {
	case limit != nil && workload.IsActive(wl):
		_, err := workloadwriter.Apply(ctx, r.writer, wl, workload.Reactivate())
		return true, err
	case workload.IsActive(wl):
		return false, nil
	case limit != nil:
		return true, r.setInadmissible(ctx, wl, limit.Message)
	}
	return true, r.setInadmissible(ctx, wl, workload.DeactivatedMessage)
}

// workloadOfPod maps a pod to the Workload its label names.
func workloadOfPod(_ context.Context, pod client.Object) []reconcile.Request {
	name := pod.GetLabels()[berthv1alpha1.WorkloadLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: name}}}
}

// podEnded passes the events of a pod that stops holding a node's
// resources: its deletion, or its move to Succeeded or Failed.
var podEnded = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		ended := func(o client.Object) bool {
			p, ok := o.(*corev1.Pod)
			return ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
		}
		return !ended(e.ObjectOld) && ended(e.ObjectNew)
	},
}
