package jobframework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// syncRunState makes the job run exactly while its Workload is admitted
// and not evicted, with the pod sets it was admitted for. The job's states,
// one write each:
//
//	running, not admitted or evicted      stop it (suspend)
//	running beyond its admission          evict its Workload (PodSetsChanged)
//	running                               report whether its pods are ready
//	stopped, admitted, evicted            restore its templates; once its pods
//	                                      are gone, requeue the Workload, or
//	                                      replace it if pod sets changed
//	stopped, admitted for other pod sets  evict its Workload (PodSetsChanged)
//	stopped, admitted elsewhere           report whether its copies' pods
//	                                      are ready (pods dispatched to a
//	                                      worker cluster stay held here)
//	stopped, admitted                     run it with the admission
//	stopped, waiting, with an old         restore its templates
//	  admission's directives
//	stopped, waiting, pod sets changed    replace its Workload
//
// Stopping takes two writes: a running Job's template cannot change, so it
// is suspended first and its template restored once it is.
func (r *JobReconciler) syncRunState(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) (ctrl.Result, error) {
	admitted := workload.IsAdmitted(wl) && wl.Status.Admission != nil
	// reserved holds quota, admitted or waiting on admission checks.
	reserved := workload.HasQuotaReservation(wl) && wl.Status.Admission != nil
	evicted := workload.IsEvicted(wl)
	podSets, errs, err := podSetsOf(ctx, r.client, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("reading the job's pod sets: %w", errs.ToAggregate())
	}
	carries := carriesAdmission(podSets)
	// A composed job short of members, one being replaced say, has pod
	// sets that are not whole: they are compared with its Workload's only
	// once it is complete again.
	// Some members of a composed job may run while others are held.
	whole, runs := true, !job.IsSuspended()
	cj, composed := job.(ComposedJob)
	if composed {
		var why string
		var invalid bool
		whole, why, invalid = cj.Complete()
		runs = cj.Runs()
		if invalid {
			// Pods added to an admitted group, say: they stay held, and
			// say why.
			r.eventf(job, wl, corev1.EventTypeWarning, EventInvalidJob, "Run", "Berth cannot run the group as it is: %s", why)
		}
	}
	if !admitted || evicted {
		if dropped, err := r.dropSlice(ctx, job, wl); err != nil || dropped {
			return ctrl.Result{}, err
		}
	}
	_, elastic := AsElastic(job)
	switch {
	case runs && (!admitted || evicted):
		return ctrl.Result{}, r.stop(ctx, job, wl)
	case !job.IsSuspended() && elastic && admitted:
		// Its pods beyond the admission wait at their gate.
		return r.syncElastic(ctx, job, wl, podSets)
	case !job.IsSuspended():
		// A group none of whose pods runs or waits (all ended or being
		// deleted) is not suspended either, admitted or not.
		if diff := beyondAdmission(wl, podSets); admitted && whole && diff != "" {
			return ctrl.Result{}, r.evictChanged(ctx, wl, "The job runs more than its Workload was admitted for: "+diff)
		}
		if diff := shapeDiffers(wl.Spec.PodSets, podSets); admitted && composed && whole && diff != "" {
			// A group that shrank (a StatefulSet scaled down) is
			// admitted again for what it now is.
			return ctrl.Result{}, r.evictChanged(ctx, wl, "The group's pods changed after its Workload was admitted: "+diff)
		}
		return ctrl.Result{}, r.apply(ctx, wl, workload.SetPodsReady(job.PodsReady()))
	case reserved && evicted:
		diff := ""
		switch {
		case !whole:
		case composed:
			diff = shapeDiffers(wl.Spec.PodSets, podSets)
		case !carries:
			diff = workload.PodSetsDiffer(wl.Spec.PodSets, podSets)
		}
		return r.release(ctx, job, wl, diff)
	case admitted && runsElsewhere(job, wl):
		// Its copies run in the worker cluster it was dispatched to; its
		// own pods stay held, their status their copies'.
		return ctrl.Result{}, r.apply(ctx, wl, workload.SetPodsReady(job.PodsReady()))
	case admitted:
		diff := ""
		if composed {
			diff = shapeDiffers(wl.Spec.PodSets, podSets)
		} else {
			if diff, err = r.changedPodSets(ctx, job, wl, podSets, carries); err != nil {
				return ctrl.Result{}, err
			}
		}
		if whole && diff != "" {
			return ctrl.Result{}, r.evictChanged(ctx, wl, "The job's pod sets changed after its Workload was admitted: "+diff)
		}
		return ctrl.Result{}, r.run(ctx, job, wl)
	case carries:
		if job.RestorePodSetsInfo(originalInfos(wl)) {
			return ctrl.Result{}, r.update(ctx, job)
		}
	default:
		if diff := workload.PodSetsDiffer(wl.Spec.PodSets, podSets); whole && diff != "" {
			return ctrl.Result{}, r.replace(ctx, job, wl, diff)
		}
	}
	return ctrl.Result{}, nil
}

// runsElsewhere reports whether the job runs in the worker cluster that
// its Workload was dispatched to, where Berth copied it, and nothing of it
// runs here: a kind without spec.managedBy (pods) cannot hand its objects
// to another controller, so they stay held while their copies run. A Job
// or a JobSet is run here, for the dispatcher to mirror its copy's status
// onto it, its own controller kept away by spec.managedBy.
func runsElsewhere(job GenericJob, wl *berthv1alpha1.Workload) bool {
	_, handsOver := job.(JobWithManagedBy)
	return wl.Status.ClusterName != "" && !handsOver
}

// evictChanged evicts the job's Workload, whose pod sets changed after
// its admission, and counts and records the eviction as the Workload
// controller does its own: in berth_evicted_workloads_total and an Evicted
// event on the Workload. The job gets its own when it is stopped.
func (r *JobReconciler) evictChanged(ctx context.Context, wl *berthv1alpha1.Workload, msg string) error {
	written, err := workloadwriter.Apply(ctx, r.writer, wl, workload.Evict(berthv1alpha1.ReasonPodSetsChanged, msg))
	if err != nil || written == wl {
		return err
	}
	cq := workload.ClusterQueueOf(wl)
	r.recorder.Eventf(wl, nil, corev1.EventTypeNormal, berthv1alpha1.WorkloadEvicted, "Evict", "Evicted from ClusterQueue %s (%s): %s", cq, berthv1alpha1.ReasonPodSetsChanged, msg)
	metrics.EvictedWorkloads.WithLabelValues(metrics.CQ(string(cq), berthv1alpha1.ReasonPodSetsChanged)...).Inc()
	return nil
}

// shapeDiffers says how pod sets differ in names, counts and requests
// per pod: what a composed job's admission does not change, when some of
// its members carry it and others do not.
func shapeDiffers(have, want []berthv1alpha1.PodSet) string {
	strip := func(in []berthv1alpha1.PodSet) []berthv1alpha1.PodSet {
		out := make([]berthv1alpha1.PodSet, len(in))
		for i := range in {
			out[i] = berthv1alpha1.PodSet{Name: in[i].Name, Count: in[i].Count, MinCount: in[i].MinCount}
			out[i].Template.Spec.Containers = in[i].Template.Spec.Containers
			out[i].Template.Spec.InitContainers = in[i].Template.Spec.InitContainers
			out[i].Template.Spec.Overhead = in[i].Template.Spec.Overhead
		}
		return out
	}
	return workload.PodSetsDiffer(strip(have), strip(want))
}

// carriesAdmission reports whether the job's templates carry what an
// admission added: they are not the user's as they are.
func carriesAdmission(podSets []berthv1alpha1.PodSet) bool {
	return slices.ContainsFunc(podSets, func(ps berthv1alpha1.PodSet) bool {
		return ps.Template.Labels[berthv1alpha1.WorkloadLabel] != ""
	})
}

// changedPodSets says how the pod sets of a stopped job differ from those
// its Workload was admitted for. Templates that carry an earlier
// admission's directives are compared as they would be restored.
func (r *JobReconciler) changedPodSets(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet, carries bool) (string, error) {
	if carries {
		restored, err := r.integration.Wrap(job.Object().DeepCopyObject().(client.Object))
		if err != nil {
			return "", err
		}
		restored.RestorePodSetsInfo(originalInfos(wl))
		var errs field.ErrorList
		if podSets, errs, err = podSetsOf(ctx, r.client, restored); err != nil || len(errs) > 0 {
			return errs.ToAggregate().Error(), err
		}
	}
	return workload.PodSetsDiffer(wl.Spec.PodSets, podSets), nil
}

// beyondAdmission says how a running job asks for more than its admission:
// more pods than admitted, or pods of other requests.
func beyondAdmission(wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet) string {
	if wl.Status.Admission == nil {
		return ""
	}
	admitted := map[string]int32{}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		admitted[psa.Name] = ptr.Deref(psa.Count, 0)
	}
	var diffs []string
	for i := range wl.Spec.PodSets {
		want := &wl.Spec.PodSets[i]
		n, ok := admitted[want.Name]
		if !ok {
			n = want.Count
		}
		for j := range podSets {
			if got := &podSets[j]; got.Name == want.Name && got.Count > n {
				diffs = append(diffs, fmt.Sprintf("podset %s: %d pods, admitted %d", got.Name, got.Count, n))
			}
		}
	}
	if diff := requestsBeyond(wl, podSets); diff != "" {
		diffs = append(diffs, diff)
	}
	return strings.Join(diffs, "; ")
}

// requestsBeyond says which podsets of a running job ask for other
// requests per pod than its Workload's: selectors and tolerations carry
// the admission's directives, and counts are checked by the caller.
func requestsBeyond(wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet) string {
	if len(podSets) != len(wl.Spec.PodSets) {
		return ""
	}
	var diffs []string
	for i := range podSets {
		have, got := workload.PodRequests(&wl.Spec.PodSets[i].Template.Spec), workload.PodRequests(&podSets[i].Template.Spec)
		if !maps.Equal(have, got) {
			diffs = append(diffs, fmt.Sprintf("podset %s: other requests per pod", podSets[i].Name))
		}
	}
	return strings.Join(diffs, "; ")
}

// stop suspends a job that runs without an admission, and says why.
func (r *JobReconciler) stop(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) error {
	ctrl.LoggerFrom(ctx).V(2).Info("Stopping the job", "workload", klog.KObj(wl))
	if r.integration.HoldOnlyAtCreation {
		// It cannot be held again: deleted, it holds its Workload's quota
		// until its containers have stopped, and its owner creates it
		// again, held.
		if cj, ok := job.(ComposedJob); ok {
			if err := cj.DeleteRunning(ctx, r.client); err != nil {
				return err
			}
		} else {
			obj := job.Object()
			if !obj.GetDeletionTimestamp().IsZero() {
				return nil
			}
			if err := r.client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
	} else {
		job.Suspend()
		if err := r.update(ctx, job); err != nil {
			return err
		}
	}
	how := "Suspended"
	if r.integration.HoldOnlyAtCreation {
		how = "Deleted"
	}
	reason, msg := EventStopped, fmt.Sprintf("%s: its Workload %s is not admitted", how, wl.Name)
	if ev := workload.FindCondition(wl, berthv1alpha1.WorkloadEvicted); ev != nil && ev.Status == metav1.ConditionTrue {
		reason, msg = berthv1alpha1.WorkloadEvicted, fmt.Sprintf("Evicted from ClusterQueue %s (%s): %s", workload.ClusterQueueOf(wl), ev.Reason, ev.Message)
		if p := workload.FindCondition(wl, berthv1alpha1.WorkloadPreempted); p != nil && p.Status == metav1.ConditionTrue {
			reason, msg = berthv1alpha1.WorkloadPreempted, fmt.Sprintf("Preempted in ClusterQueue %s (%s): %s", workload.ClusterQueueOf(wl), p.Reason, p.Message)
		}
	}
	r.eventf(job, wl, corev1.EventTypeNormal, reason, "Stop", "%s", msg)
	return nil
}

// podsLeft counts the pods of wl that have not ended, from the cache and,
// when the cache holds none, from the API server: the job's controller may
// have made a pod just before the job was stopped, which the cache has not
// seen yet. Its quota released then, that pod could start beside the
// workload admitted in its place (an end-to-end sampler saw 17 GPUs of 16
// so, the evicted job's pod started in the second it was preempted).
func (r *JobReconciler) podsLeft(ctx context.Context, wl *berthv1alpha1.Workload) (int, error) {
	key := client.ObjectKeyFromObject(wl)
	n, err := LivePods(ctx, r.client, key)
	if err != nil || n > 0 || r.live == nil {
		return n, err
	}
	return LivePods(ctx, r.live, key)
}

// release gives an evicted job's quota back once the job is stopped: its
// templates restored and every pod it ran gone from its node. A job whose
// pod sets changed (diff) gets a new Workload rather than its old one
// requeued: requeued, the old one could be admitted again for what the job
// no longer is, and evicted again.
func (r *JobReconciler) release(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload, diff string) (ctrl.Result, error) {
	if job.RestorePodSetsInfo(originalInfos(wl)) {
		return ctrl.Result{}, r.update(ctx, job)
	}
	if n, err := r.podsLeft(ctx, wl); err != nil || n > 0 {
		if n > 0 {
			ctrl.LoggerFrom(ctx).V(3).Info("Waiting for the evicted job's pods to end", "pods", n)
		}
		return ctrl.Result{RequeueAfter: podsGonePoll}, err
	}
	if diff != "" {
		return ctrl.Result{}, r.replace(ctx, job, wl, diff)
	}
	d := workload.NextRequeue(wl, r.backoff, time.Now())
	if written, err := workloadwriter.Requeue(ctx, r.client, r.writer, wl, d); err != nil || !written {
		return ctrl.Result{}, err
	}
	msg := workload.RequeueMessage(wl, d)
	r.eventf(job, wl, corev1.EventTypeNormal, berthv1alpha1.WorkloadRequeued, "Requeue", "%s", msg)
	r.recorder.Eventf(wl, job.Object(), corev1.EventTypeNormal, berthv1alpha1.WorkloadRequeued, "Requeue", "%s", msg)
	return ctrl.Result{}, nil
}

// run starts an admitted job with its admission's counts and scheduling
// directives.
func (r *JobReconciler) run(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) error {
	infos, err := admittedInfos(ctx, r.client, wl)
	if err != nil {
		return err
	}
	if err := job.RunWithPodSetsInfo(infos); err != nil {
		return fmt.Errorf("running the job with its admission: %w", err)
	}
	if err := r.update(ctx, job); err != nil {
		return err
	}
	msg := fmt.Sprintf("Admitted by ClusterQueue %s: %s", workload.ClusterQueueOf(wl), workload.DescribeAdmission(wl.Status.Admission))
	if c := workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue {
		// Its wait and flavors, as the scheduler wrote them.
		msg = c.Message
	}
	r.eventf(job, wl, corev1.EventTypeNormal, berthv1alpha1.WorkloadAdmitted, "Run", "%s", msg)
	return nil
}

// replace deletes the Workload of a waiting job whose pod sets changed;
// the job gets a new one, at the back of its queue, on the deletion's
// event.
func (r *JobReconciler) replace(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload, diff string) error {
	if err := r.deleteWorkload(ctx, wl); err != nil {
		return err
	}
	r.eventf(job, wl, corev1.EventTypeNormal, EventReplacedWorkload, "DeleteWorkload",
		"The job's pod sets changed while it waited (%s): its Workload %s is replaced by one that asks for them", diff, wl.Name)
	return nil
}
