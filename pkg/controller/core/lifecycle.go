package core

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workload"
)

// The writes of a Workload's life cycle outside admission. Each is one
// patch carrying the resourceVersion it was computed from.

// Evict tells an admitted workload to stop: Evicted=True with reason. Its
// quota is released when it is requeued, once its pods are stopped.
func Evict(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload, reason, message string) error {
	patched := statusCopy(wl)
	if !workload.SetCondition(patched, berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, reason, message) {
		return nil
	}
	return patchStatus(ctx, c, wl, patched)
}

// Requeue releases an evicted workload's quota and queues it again:
// admission cleared, QuotaReserved=False, Admitted=False, Requeued=True.
func Requeue(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload) error {
	patched := statusCopy(wl)
	setRequeued(patched)
	return patchStatus(ctx, c, wl, patched)
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
	return patchStatus(ctx, c, wl, patched)
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
	return patchStatus(ctx, c, wl, patched)
}

func setPriority(ctx context.Context, c client.Client, wl *berthv1alpha1.Workload, value int32) error {
	patched := wl.DeepCopy()
	patched.Spec.Priority = ptr.To(value)
	return c.Patch(ctx, patched, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
}

// statusCopy is a copy of wl whose status is its own, to be changed and
// written with patchStatus. Its metadata and spec are wl's, shared: never
// change them through it. A deep copy of the whole Workload, pod templates
// and all, was the largest allocation of an admission after the write.
func statusCopy(wl *berthv1alpha1.Workload) *berthv1alpha1.Workload {
	c := *wl
	wl.Status.DeepCopyInto(&c.Status)
	return &c
}

// patchStatus writes patched's status over orig's, failing if orig is not
// the latest version. The API server answers with the object's metadata
// alone: the caller has the rest, and a whole Workload encoded, sent and
// decoded on every admission costs both sides more than the write itself.
// patched gets the new resourceVersion. Through a client made by
// WithStatusPut the write is a PUT of patched; otherwise it is a patch of
// the difference of the statuses alone.
func patchStatus(ctx context.Context, c client.Client, orig, patched *berthv1alpha1.Workload) error {
	if p, ok := c.(*statusPutClient); ok {
		if patched.ResourceVersion != orig.ResourceVersion {
			return fmt.Errorf("workload %s: the status to write is of version %s, not %s", workload.Key(orig), patched.ResourceVersion, orig.ResourceVersion)
		}
		rv, err := p.putStatus(ctx, patched)
		if err != nil {
			return err
		}
		patched.ResourceVersion = rv
		return nil
	}
	data, err := statusPatch(orig.ResourceVersion, &orig.Status, &patched.Status)
	if err != nil {
		return err
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: orig.Name, Namespace: orig.Namespace}}
	meta.SetGroupVersionKind(berthv1alpha1.GroupVersion.WithKind("Workload"))
	if err := c.Status().Patch(ctx, meta, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	patched.ResourceVersion = meta.ResourceVersion
	return nil
}

// statusPatch is the JSON merge patch from one status to another, bound to
// resourceVersion rv. A field that changed is sent whole, or null when it
// is gone: a merge patch replaces lists whole anyway, and a status field
// that changes mostly appears or goes (an admission made, then taken
// away). Only when an admission or requeue state changes in place does it
// take the generic difference, which marshals both whole statuses, decodes
// them again and compares them key by key: the largest allocation of an
// admission.
func statusPatch(rv string, from, to *berthv1alpha1.WorkloadStatus) ([]byte, error) {
	if (from.Admission != nil && to.Admission != nil && !equality.Semantic.DeepEqual(from.Admission, to.Admission)) ||
		(from.RequeueState != nil && to.RequeueState != nil && !equality.Semantic.DeepEqual(from.RequeueState, to.RequeueState)) {
		return client.MergeFromWithOptions(
			&berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}, Status: *from},
			client.MergeFromWithOptimisticLock{},
		).Data(&berthv1alpha1.Workload{Status: *to})
	}
	status := map[string]any{}
	if !equality.Semantic.DeepEqual(from.Conditions, to.Conditions) {
		status["conditions"] = nullIfEmpty(to.Conditions)
	}
	if !equality.Semantic.DeepEqual(from.Admission, to.Admission) {
		status["admission"] = to.Admission
	}
	if !equality.Semantic.DeepEqual(from.RequeueState, to.RequeueState) {
		status["requeueState"] = to.RequeueState
	}
	patch := map[string]any{"metadata": map[string]string{"resourceVersion": rv}}
	if len(status) > 0 {
		patch["status"] = status
	}
	return json.Marshal(patch)
}

// nullIfEmpty is conds, or nil (JSON null) when there are none, as the
// status field omits them.
func nullIfEmpty(conds []metav1.Condition) any {
	if len(conds) == 0 {
		return nil
	}
	return conds
}
