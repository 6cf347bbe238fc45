package core

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workload"
)

// The writes of a Workload's life cycle outside admission. Each is one
// write of its status, bound to the resourceVersion it was computed from.

// Evict tells an admitted workload to stop: Evicted=True with reason. Its
// quota is released when it is requeued, once its pods are stopped.
func Evict(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload, reason, message string) error {
	patched := statusCopy(wl)
	if !workload.SetCondition(patched, berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, reason, message) {
		return nil
	}
	return writeWorkloadStatus(ctx, c, patched)
}

// Requeue releases an evicted workload's quota and queues it again:
// admission cleared, QuotaReserved=False, Admitted=False, Requeued=True.
func Requeue(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload) error {
	patched := statusCopy(wl)
	setRequeued(patched)
	return writeWorkloadStatus(ctx, c, patched)
}

// setRequeued changes wl, evicted, into its requeued self.
func setRequeued(wl *berthv1alpha1.Workload) {
	reason := berthv1alpha1.ReasonPending
	why := "the workload was evicted"
	if ev := workload.FindCondition(wl, berthv1alpha1.WorkloadEvicted); ev != nil {
		reason, why = ev.Reason, ev.Message
	}
	wl.Status.Admission = nil
	msg := fmt.Sprintf("Requeued after eviction (%s): %s", reason, why)
	workload.SetCondition(wl, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
	workload.SetCondition(wl, berthv1alpha1.WorkloadAdmitted, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
	workload.SetCondition(wl, berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, reason, msg)
	if workload.FindCondition(wl, berthv1alpha1.WorkloadPodsReady) != nil {
		workload.SetCondition(wl, berthv1alpha1.WorkloadPodsReady, metav1.ConditionFalse, berthv1alpha1.ReasonPending, msg)
	}
	state := wl.Status.RequeueState
	if state == nil {
		state = &berthv1alpha1.RequeueState{}
	}
	state.Count = ptr.To(ptr.Deref(state.Count, 0) + 1)
	wl.Status.RequeueState = state
}

// Finish marks a workload finished; its quota is released.
func Finish(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload, reason, message string) error {
	patched := statusCopy(wl)
	if !workload.SetCondition(patched, berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, reason, message) {
		return nil
	}
	return writeWorkloadStatus(ctx, c, patched)
}

// SetPodsReady records whether all the workload's pods are ready.
func SetPodsReady(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload, ready bool) error {
	patched := statusCopy(wl)
	status, reason, msg := metav1.ConditionFalse, "PodsNotReady", "Not all pods are ready"
	if ready {
		status, reason, msg = metav1.ConditionTrue, "PodsReady", "All pods are ready"
	}
	if !workload.SetCondition(patched, berthv1alpha1.WorkloadPodsReady, status, reason, msg) {
		return nil
	}
	return writeWorkloadStatus(ctx, c, patched)
}

func setPriority(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload, value int32) error {
	patched := wl.DeepCopy()
	patched.Spec.Priority = ptr.To(value)
	return c.Patch(ctx, patched, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
}

// statusCopy is a copy of wl whose status is its own, to be changed and
// written with writeWorkloadStatus. Its metadata and spec are wl's, shared: never
// change them through it. A deep copy of the whole Workload, pod templates
// and all, was the largest allocation of an admission after the write.
func statusCopy(wl *berthv1alpha1.Workload) *berthv1alpha1.Workload {
	c := *wl
	wl.Status.DeepCopyInto(&c.Status)
	return &c
}

// writeWorkloadStatus writes patched's status, failing if patched (a
// statusCopy) is not of the latest version: through a client made by
// WithStatusPut, a PUT of patched answered with the object's metadata
// alone (the caller has the rest, and a whole Workload encoded, sent and
// decoded on every admission costs both sides more than the write itself);
// through another client, the fake client of unit tests, an update of a
// copy of patched. patched gets the new resourceVersion.
func writeWorkloadStatus(ctx context.Context, c client.Client, patched *berthv1alpha1.Workload) error {
	if p, ok := c.(*statusPutClient); ok {
		rv, err := p.putStatus(ctx, patched)
		if err != nil {
			return err
		}
		patched.ResourceVersion = rv
		return nil
	}
	// A copy: the client decodes its answer into it, and patched shares
	// its metadata and spec with the cached object.
	obj := patched.DeepCopy()
	if err := c.Status().Update(ctx, obj); err != nil {
		return err
	}
	patched.ResourceVersion = obj.ResourceVersion
	return nil
}
