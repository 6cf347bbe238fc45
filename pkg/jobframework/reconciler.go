package jobframework

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// JobReconciler runs the life cycle of the jobs of one framework.
type JobReconciler struct {
	client      client.Client
	writer      workloadwriter.Writer
	integration *Integration
	// manageWithoutQueueName makes Berth manage jobs without the queue
	// label too; they wait with a condition that says they have no queue.
	manageWithoutQueueName bool
}

// Reconcile brings one job and its Workload in step.
func (r *JobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := r.integration.NewJob()
	if err := r.client.Get(ctx, req.NamespacedName, job.Object()); err != nil {
		// A deleted job's Workload is garbage-collected with it.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	obj := job.Object()
	if QueueName(obj) == "" && !r.manageWithoutQueueName {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues(r.integration.GVK.Kind, klog.KObj(obj))
	ctx = ctrl.LoggerInto(ctx, log)

	wl, err := r.workloadOf(ctx, job)
	if err != nil || wl == nil {
		return ctrl.Result{}, err
	}
	if workload.IsFinished(wl) {
		return ctrl.Result{}, nil
	}
	if finished, succeeded, msg := job.Finished(); finished {
		return ctrl.Result{}, r.apply(ctx, wl, workload.Finish(finishReason(succeeded), msg))
	}
	if synced, err := r.syncLabels(ctx, job, wl); err != nil || !synced {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.syncRunState(ctx, job, wl)
}

// workloadOf returns the job's Workload, creating it (and returning nil:
// its creation event comes back) when there is none.
func (r *JobReconciler) workloadOf(ctx context.Context, job GenericJob) (*berthv1alpha1.Workload, error) {
	obj := job.Object()
	gvk := r.integration.GVK
	wl := &berthv1alpha1.Workload{}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: WorkloadName(gvk, obj.GetName(), string(obj.GetUID()))}
	err := r.client.Get(ctx, key, wl)
	if err == nil {
		return wl, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	if finished, _, _ := job.Finished(); finished {
		return nil, nil
	}
	if !job.IsSuspended() {
		// A job must not run before admission, even if it was created
		// while the webhook was away.
		job.Suspend()
		return nil, r.client.Update(ctx, obj)
	}
	priority, err := r.priorityOf(ctx, PriorityClassName(obj))
	if err != nil {
		return nil, err
	}
	wl, err = newWorkload(job, gvk, priority)
	if err != nil {
		return nil, err
	}
	if err := r.client.Create(ctx, wl); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Created the job's Workload", "workload", klog.KObj(wl))
	return nil, nil
}

// priorityOf is the value of a WorkloadPriorityClass; nil when there is
// no class or it does not exist yet (the Workload then waits saying so).
func (r *JobReconciler) priorityOf(ctx context.Context, class string) (*int32, error) {
	if class == "" {
		return nil, nil
	}
	wpc := &berthv1alpha1.WorkloadPriorityClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: class}, wpc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return ptr.To(wpc.Value), nil
}

// syncLabels carries changes of the job's queue and priority labels to
// its Workload. The queue can change only while the workload waits. It
// reports whether the Workload was already in step.
func (r *JobReconciler) syncLabels(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) (bool, error) {
	obj := job.Object()
	patched := wl.DeepCopy()
	if q := berthv1alpha1.LocalQueueName(QueueName(obj)); q != wl.Spec.QueueName && !workload.HasQuotaReservation(wl) {
		patched.Spec.QueueName = q
	}
	if class := PriorityClassName(obj); class != wl.Spec.PriorityClassName {
		priority, err := r.priorityOf(ctx, class)
		if err != nil {
			return false, err
		}
		patched.Spec.PriorityClassName = class
		patched.Spec.Priority = priority
	}
	if patched.Spec.QueueName == wl.Spec.QueueName && patched.Spec.PriorityClassName == wl.Spec.PriorityClassName {
		return true, nil
	}
	return false, r.client.Patch(ctx, patched, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
}

// syncRunState makes the job run exactly while its Workload is admitted
// and not evicted. Stopping takes two writes: a running Job's template
// cannot change, so it is suspended first and its template restored once
// it is.
func (r *JobReconciler) syncRunState(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) error {
	admitted := workload.IsAdmitted(wl) && wl.Status.Admission != nil
	switch {
	case !job.IsSuspended() && (!admitted || workload.IsEvicted(wl)):
		ctrl.LoggerFrom(ctx).V(2).Info("Stopping the job", "workload", klog.KObj(wl))
		job.Suspend()
		return r.client.Update(ctx, job.Object())
	case admitted && workload.IsEvicted(wl):
		if job.RestorePodSetsInfo(originalInfos(wl)) {
			return r.client.Update(ctx, job.Object())
		}
		// The job is stopped: its quota can go to others.
		return r.apply(ctx, wl, workload.Requeue())
	case admitted && job.IsSuspended():
		infos, err := admittedInfos(ctx, r.client, wl)
		if err != nil {
			return err
		}
		if err := job.RunWithPodSetsInfo(infos); err != nil {
			return fmt.Errorf("running the job with its admission: %w", err)
		}
		return r.client.Update(ctx, job.Object())
	case admitted:
		return r.apply(ctx, wl, workload.SetPodsReady(job.PodsReady()))
	case job.RestorePodSetsInfo(originalInfos(wl)):
		return r.client.Update(ctx, job.Object())
	}
	return nil
}

// apply writes a transition of the job's Workload.
func (r *JobReconciler) apply(ctx context.Context, wl *berthv1alpha1.Workload, change workload.Change) error {
	_, err := workloadwriter.Apply(ctx, r.writer, wl, change)
	return err
}
