package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Retention is how long Workloads that are done are kept
// (objectRetentionPolicies.workloads); nil keeps them.
type Retention struct {
	// AfterFinished deletes a finished Workload this long after it
	// finished.
	AfterFinished *time.Duration
	// AfterDeactivated deletes a Workload that Berth deactivated, and its
	// job, this long after it did.
	AfterDeactivated *time.Duration
}

// expireFinished deletes a finished Workload once its retention is over,
// or says when to look again. Its job, finished, gets no new Workload.
func (r *WorkloadReconciler) expireFinished(ctx context.Context, wl *berthv1alpha1.Workload) (ctrl.Result, error) {
	keep := r.retention.AfterFinished
	c := workload.FindCondition(wl, berthv1alpha1.WorkloadFinished)
	if keep == nil || c == nil || !wl.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if left := time.Until(c.LastTransitionTime.Add(*keep)); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleting a finished Workload", "finished", c.LastTransitionTime, "afterFinished", *keep)
	return ctrl.Result{}, deleteIfUnchanged(ctx, r.client, wl)
}

// expireDeactivated deletes a Workload that Berth deactivated, with its
// job, once its retention is over, or says when to look again. Deleting the
// Workload alone would have the job's integration queue the job again, as
// if it had never been deactivated.
func (r *WorkloadReconciler) expireDeactivated(ctx context.Context, wl *berthv1alpha1.Workload, why *metav1.Condition) (ctrl.Result, error) {
	keep := r.retention.AfterDeactivated
	if keep == nil || why == nil || workload.IsActive(wl) || !wl.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if left := time.Until(why.LastTransitionTime.Add(*keep)); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	owners := jobsOf(wl)
	for _, o := range owners {
		obj := &metav1.PartialObjectMetadata{}
		obj.APIVersion, obj.Kind = o.APIVersion, o.Kind
		obj.Namespace, obj.Name = wl.Namespace, o.Name
		err := r.client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(o.UID)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("deleting %s %s of deactivated Workload %s: %w", o.Kind, o.Name, wl.Name, err)
		}
		r.recorder.Eventf(wl, nil, corev1.EventTypeNormal, EventRetentionExpired, "Delete",
			"Deleted %s %s: Berth deactivated the workload at %s, and objectRetentionPolicies.workloads.afterDeactivatedByBerth (%s) is over",
			o.Kind, o.Name, why.LastTransitionTime.UTC().Format(time.RFC3339), *keep)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleting a Workload Berth deactivated", "owners", len(owners), "workload", klog.KObj(wl))
	return ctrl.Result{}, deleteIfUnchanged(ctx, r.client, wl)
}

// EventRetentionExpired is the reason of the event on a Workload whose job
// Berth deleted under objectRetentionPolicies.
const EventRetentionExpired = "RetentionExpired"

// jobsOf are the owners of wl that Berth would queue again were the
// Workload deleted alone: its controller, a Job or JobSet, or the pods of
// a pod group, which no one object controls.
func jobsOf(wl *berthv1alpha1.Workload) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, o := range wl.OwnerReferences {
		group := wl.Labels[berthv1alpha1.PodGroupNameLabel] != "" && o.APIVersion == "v1" && o.Kind == "Pod"
		if group || ptr.Deref(o.Controller, false) {
			out = append(out, o)
		}
	}
	return out
}

// deleteIfUnchanged deletes wl unless it changed since it was read.
func deleteIfUnchanged(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload) error {
	pre := client.Preconditions{UID: ptr.To(wl.UID), ResourceVersion: ptr.To(wl.ResourceVersion)}
	if err := c.Delete(ctx, wl, pre); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}
