package jobframework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Reasons of the events on jobs that are not among the Workload's.
const (
	// EventCreatedWorkload is the event of a job whose Workload was created.
	EventCreatedWorkload = "CreatedWorkload"
	// EventInvalidJob is the Warning of a job that cannot become a Workload.
	EventInvalidJob = "InvalidJob"
	// EventReplacedWorkload is the event of a waiting job whose pod sets
	// changed, and whose Workload was replaced to follow them.
	EventReplacedWorkload = "ReplacedWorkload"
	// EventLeftQueue is the event of a waiting job whose queue label was
	// removed: its Workload is deleted and Berth no longer holds it.
	EventLeftQueue = "LeftQueue"
	// EventStopped is the event of a job that ran without admission and
	// was suspended.
	EventStopped = "Stopped"
)

// JobReconciler runs the life cycle of the jobs of one framework.
type JobReconciler struct {
	client client.Client
	// reader reads what the cache may not hold yet, for Selects.
	reader client.Reader
	// live reads from the API server, past the cache.
	live        client.Reader
	writer      workloadwriter.Writer
	recorder    events.EventRecorder
	integration *Integration
	// opts.ManageJobsWithoutQueueName makes Berth manage jobs without the
	// queue label too, in opts.ManagedNamespaces; they wait with a condition
	// that says they have no queue.
	opts    Options
	backoff workload.Backoff
}

// groupRequest marks the request of a composed job: its name follows. No
// object's name has a slash.
const groupRequest = "group/"

// Reconcile brings one job and its Workload in step.
func (r *JobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job GenericJob
	if group, ok := strings.CutPrefix(req.Name, groupRequest); ok && r.integration.LoadGroup != nil {
		cj, err := r.integration.LoadGroup(ctx, r.client, req.Namespace, group)
		if err != nil {
			return ctrl.Result{}, err
		}
		if cj == nil {
			return r.deleteAbandoned(ctx, req.Namespace, group)
		}
		job = cj
	} else {
		job = r.integration.NewJob()
		if err := r.client.Get(ctx, req.NamespacedName, job.Object()); err != nil {
			// A deleted job's Workload is garbage-collected with it.
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	obj := job.Object()
	wl, err := r.workloadOf(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A job that has a Workload stays Berth's until the Workload is done,
	// label or not: its quota must be given back when it ends.
	managed, err := r.opts.Holds(ctx, r.client, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wl == nil && (!managed || r.integration.HoldOnlyAtCreation && !job.IsSuspended()) {
		// A job that can be held only at creation and was not is not
		// Berth's: it started outside the queue.
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues(r.integration.GVK.Kind, klog.KObj(obj)))
	switch {
	case wl == nil:
		// What the webhook left to another job (a RayJob's own cluster)
		// is left here too; a kind held only at creation was judged then.
		if !r.integration.HoldOnlyAtCreation {
			if selected, err := r.integration.selects(ctx, r.reader, obj, r.opts); err != nil || !selected {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, r.createWorkload(ctx, job)
	case workload.IsFinished(wl):
		if _, ok := job.(ComposedJob); ok && job.IsSuspended() {
			r.eventf(job, wl, corev1.EventTypeWarning, EventInvalidJob, "CreateWorkload",
				"The group's Workload %s has finished: a group name is used once; give the new pods another", wl.Name)
		}
		return ctrl.Result{}, nil
	}
	if cj, ok := job.(ComposedJob); ok {
		if adopted, err := r.adopt(ctx, cj, wl); err != nil || !adopted {
			return ctrl.Result{}, err
		}
	}
	if finished, succeeded, msg := job.Finished(); finished {
		// A JobSet ends while the pods of its other Jobs still terminate,
		// a failed Job while its last pods do: the quota is theirs until
		// none holds a node.
		if n, err := LivePods(ctx, r.client, client.ObjectKeyFromObject(wl)); err != nil || n > 0 {
			return ctrl.Result{RequeueAfter: podsGonePoll}, err
		}
		if dropped, err := r.dropSlice(ctx, job, wl); err != nil || dropped {
			return ctrl.Result{}, err
		}
		if err := r.apply(ctx, wl, workload.Finish(finishReason(succeeded), msg)); err != nil {
			return ctrl.Result{}, err
		}
		r.recorder.Eventf(wl, obj, corev1.EventTypeNormal, berthv1alpha1.WorkloadFinished, "Finish", "%s", msg)
		return ctrl.Result{}, nil
	}
	if !managed && !workload.HasQuotaReservation(wl) {
		return ctrl.Result{}, r.leaveQueue(ctx, job, wl)
	}
	if synced, err := r.syncLabels(ctx, job, wl); err != nil || !synced {
		return ctrl.Result{}, err
	}
	return r.syncRunState(ctx, job, wl)
}

// workloadOf returns the job's Workload, nil when there is none.
func (r *JobReconciler) workloadOf(ctx context.Context, job GenericJob) (*berthv1alpha1.Workload, error) {
	wl := &berthv1alpha1.Workload{}
	obj := job.Object()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: WorkloadName(r.integration.GVK, obj.GetName(), string(obj.GetUID()))}
	if cj, ok := job.(ComposedJob); ok {
		key.Name = cj.WorkloadName()
	}
	if err := r.client.Get(ctx, key, wl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return wl, nil
}

// adopt makes every member of a composed job an owner of its Workload,
// so that the Workload outlives the members it was created with while
// others, which replaced them, may run. It reports whether the Workload
// already had them all.
func (r *JobReconciler) adopt(ctx context.Context, job ComposedJob, wl *berthv1alpha1.Workload) (bool, error) {
	patched := wl.DeepCopy()
	for _, o := range job.Owners() {
		if !slices.ContainsFunc(patched.OwnerReferences, func(have metav1.OwnerReference) bool { return have.UID == o.UID }) {
			patched.OwnerReferences = append(patched.OwnerReferences, o)
		}
	}
	if len(patched.OwnerReferences) == len(wl.OwnerReferences) {
		return true, nil
	}
	return false, r.client.Patch(ctx, patched, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
}

// deleteAbandoned deletes the Workloads of a group that has no members
// left, once none of its pods holds a node: a StatefulSet scaled to zero
// owns its group's Workload still. A finished one is left to the garbage
// collector.
func (r *JobReconciler) deleteAbandoned(ctx context.Context, ns, group string) (ctrl.Result, error) {
	list := &berthv1alpha1.WorkloadList{}
	if err := r.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{r.integration.GroupLabel: group}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range list.Items {
		wl := &list.Items[i]
		if workload.IsFinished(wl) || !wl.DeletionTimestamp.IsZero() {
			continue
		}
		if n, err := LivePods(ctx, r.client, client.ObjectKeyFromObject(wl)); err != nil || n > 0 {
			return ctrl.Result{RequeueAfter: podsGonePoll}, err
		}
		ctrl.LoggerFrom(ctx).V(2).Info("Deleting the Workload of a group without pods", "workload", klog.KObj(wl))
		if err := r.deleteWorkload(ctx, wl); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// eventf records an event on the job, on each of its members when it has
// several.
func (r *JobReconciler) eventf(job GenericJob, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	cj, ok := job.(ComposedJob)
	if !ok {
		r.recorder.Eventf(job.Object(), related, eventtype, reason, action, note, args...)
		return
	}
	for _, m := range cj.Members() {
		r.recorder.Eventf(m, related, eventtype, reason, action, note, args...)
	}
}

// update writes the job's changes.
func (r *JobReconciler) update(ctx context.Context, job GenericJob) error {
	if cj, ok := job.(ComposedJob); ok {
		return cj.Update(ctx, r.client)
	}
	return r.client.Update(ctx, job.Object())
}

// createWorkload creates the job's Workload; its creation event comes back.
// A job that cannot become one gets a Warning that names the field.
func (r *JobReconciler) createWorkload(ctx context.Context, job GenericJob) error {
	obj := job.Object()
	if finished, _, _ := job.Finished(); finished || !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	if cj, ok := job.(ComposedJob); ok {
		if complete, why, invalid := cj.Complete(); !complete {
			if invalid {
				r.eventf(job, nil, corev1.EventTypeWarning, EventInvalidJob, "CreateWorkload", "Berth cannot queue the group: %s", why)
			}
			ctrl.LoggerFrom(ctx).V(3).Info("The group is not whole yet", "why", why)
			return nil
		}
	}
	if !job.IsSuspended() {
		// A job must not run before admission, even if it was created
		// while the webhook was away.
		job.Suspend()
		return r.update(ctx, job)
	}
	podSets, errs, err := podSetsOf(ctx, r.client, job)
	if err != nil {
		return err
	}
	if _, ferr := MaxExecTimeSeconds(obj); ferr != nil {
		errs = append(errs, ferr)
	}
	if len(errs) > 0 {
		// Nothing to retry: a change of the job brings it back.
		r.eventf(job, nil, corev1.EventTypeWarning, EventInvalidJob, "CreateWorkload",
			"Berth cannot queue the job: %s", errs.ToAggregate().Error())
		return nil
	}
	priority, err := priorityOfJob(ctx, r.client, obj, podSets)
	if err != nil {
		return err
	}
	wl := newWorkload(obj, r.integration.GVK, podSets, priority)
	if cj, ok := job.(ComposedJob); ok {
		wl.Name, wl.OwnerReferences = cj.WorkloadName(), cj.Owners()
		maps.Copy(wl.Labels, cj.WorkloadLabels())
		delete(wl.Labels, berthv1alpha1.JobUIDLabel)
	}
	if err := r.writer.Create(ctx, wl); err != nil {
		return client.IgnoreAlreadyExists(err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Created the job's Workload", "workload", klog.KObj(wl))
	r.eventf(job, wl, corev1.EventTypeNormal, EventCreatedWorkload, "CreateWorkload",
		"Created Workload %s in LocalQueue %s", wl.Name, wl.Spec.QueueName)
	return nil
}

// leaveQueue deletes the Workload of a waiting job whose queue label was
// removed: the user took it out of Berth. The job stays as it is.
func (r *JobReconciler) leaveQueue(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) error {
	if err := r.deleteWorkload(ctx, wl); err != nil {
		return err
	}
	r.eventf(job, wl, corev1.EventTypeNormal, EventLeftQueue, "DeleteWorkload",
		"The job no longer has the label %s: deleted its Workload %s from LocalQueue %s", berthv1alpha1.QueueNameLabel, wl.Name, wl.Spec.QueueName)
	return nil
}

// deleteWorkload deletes wl if it is still the version read.
func (r *JobReconciler) deleteWorkload(ctx context.Context, wl *berthv1alpha1.Workload) error {
	pre := client.Preconditions{UID: ptr.To(wl.UID), ResourceVersion: ptr.To(wl.ResourceVersion)}
	return client.IgnoreNotFound(r.client.Delete(ctx, wl, pre))
}

// syncLabels carries changes of the job's queue, priority and execution
// time labels to its Workload. The queue can change only while the
// workload waits. It
// reports whether the Workload was already in step.
func (r *JobReconciler) syncLabels(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) (bool, error) {
	obj := job.Object()
	patched := wl.DeepCopy()
	if q := berthv1alpha1.LocalQueueName(QueueName(obj)); q != "" && q != wl.Spec.QueueName && !workload.HasQuotaReservation(wl) {
		patched.Spec.QueueName = q
	}
	if PriorityClassName(obj) != wl.Spec.PriorityClassName {
		// A job without the label whose Workload has the default class
		// comes here on each reconcile, and writes nothing.
		priority, err := priorityOfJob(ctx, r.client, obj, wl.Spec.PodSets)
		if err != nil {
			return false, err
		}
		priority.set(&patched.Spec)
	}
	if maxExec, ferr := MaxExecTimeSeconds(obj); ferr == nil && !ptr.Equal(maxExec, wl.Spec.MaximumExecutionTimeSeconds) {
		patched.Spec.MaximumExecutionTimeSeconds = maxExec
	}
	if patched.Spec.QueueName == wl.Spec.QueueName && patched.Spec.PriorityClassName == wl.Spec.PriorityClassName &&
		ptr.Equal(patched.Spec.PriorityClassRef, wl.Spec.PriorityClassRef) &&
		ptr.Equal(patched.Spec.MaximumExecutionTimeSeconds, wl.Spec.MaximumExecutionTimeSeconds) {
		return true, nil
	}
	return false, r.client.Patch(ctx, patched, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
}

// apply writes a transition of the job's Workload.
func (r *JobReconciler) apply(ctx context.Context, wl *berthv1alpha1.Workload, change workload.Change) error {
	_, err := workloadwriter.Apply(ctx, r.writer, wl, change)
	return err
}

// podsGonePoll is how often a stopped job's pods are counted again while
// some still run: the last pod's end does not always change the job.
const podsGonePoll = time.Second

// LivePods counts the pods of wl that may still hold resources on a node:
// every pod with its label that has not succeeded or failed, terminating
// ones included. Quota is released only when there are none.
func LivePods(ctx context.Context, c client.Reader, wl types.NamespacedName) (int, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(wl.Namespace), client.MatchingLabels{berthv1alpha1.WorkloadLabel: wl.Name}); err != nil {
		return 0, fmt.Errorf("counting the pods of workload %s: %w", wl.Name, err)
	}
	n := 0
	for i := range pods.Items {
		if p := pods.Items[i].Status.Phase; p != corev1.PodSucceeded && p != corev1.PodFailed {
			n++
		}
	}
	return n, nil
}
