package workloadwriter

import (
	"context"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Writer creates Workloads and writes their status.
type Writer interface {
	// Create creates wl and takes the metadata the API server gave it
	// (its UID, resourceVersion and creation time) into wl. It changes
	// nothing else of wl.
	Create(ctx context.Context, wl *berthv1alpha1.Workload) error
	// WriteStatus writes wl's status, failing with a conflict unless
	// wl.ResourceVersion is still the stored one, and sets
	// wl.ResourceVersion to the new one. It does not write wl's spec or
	// metadata, and changes nothing else of wl.
	WriteStatus(ctx context.Context, wl *berthv1alpha1.Workload) error
}

// Apply applies change to a copy of wl and, if it changed anything, writes
// the copy's status with w. It returns the copy as written, or wl when
// there was nothing to write. wl itself is left alone: it is usually the
// informer's object, which others read at the same time.
func Apply(ctx context.Context, w Writer, wl *berthv1alpha1.Workload, change workload.Change) (*berthv1alpha1.Workload, error) {
	patched := statusCopy(wl)
	if !change(patched) {
		return wl, nil
	}
	if err := w.WriteStatus(ctx, patched); err != nil {
		return nil, err
	}
	return patched, nil
}

// statusCopy is a copy of wl with its own metadata and status. Its spec
// is wl's: a Change touches only the status, and no Writer sends the spec.
// A deep copy of the whole Workload, pod templates and all, was the largest
// allocation of an admission after the write itself.
func statusCopy(wl *berthv1alpha1.Workload) *berthv1alpha1.Workload {
	c := &berthv1alpha1.Workload{TypeMeta: wl.TypeMeta, Spec: wl.Spec}
	wl.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	wl.Status.DeepCopyInto(&c.Status)
	return c
}

// NewUpdate returns a Writer that updates the status subresource through
// c, decoding the whole answer: for clients that are not a real API
// server's, such as the fake client of unit tests.
func NewUpdate(c client.Client) Writer { return updateWriter{c} }

type updateWriter struct{ client client.Client }

// Create creates a copy of wl, whose metadata it takes.
func (u updateWriter) Create(ctx context.Context, wl *berthv1alpha1.Workload) error {
	obj := wl.DeepCopy()
	if err := u.client.Create(ctx, obj); err != nil {
		return err
	}
	wl.ObjectMeta = obj.ObjectMeta
	return nil
}

// WriteStatus updates the status subresource.
func (u updateWriter) WriteStatus(ctx context.Context, wl *berthv1alpha1.Workload) error {
	// A copy: the client decodes its answer into it, and wl shares its
	// spec with the cached object.
	obj := wl.DeepCopy()
	if err := u.client.Status().Update(ctx, obj); err != nil {
		return err
	}
	wl.ResourceVersion = obj.ResourceVersion
	return nil
}

// Requeue releases an evicted workload's quota as d says. A workload past
// its backoff's limit is deactivated first, a write of its spec.active
// through c: from then on it stays out of the queues whatever comes next,
// and the requeue, which says why, follows on the next reconcile. It
// reports whether the requeue itself was written.
func Requeue(ctx context.Context, c client.Client, w Writer, wl *berthv1alpha1.Workload, d workload.RequeueDecision) (bool, error) {
	if d.Deactivate != "" && workload.IsActive(wl) {
		patched := wl.DeepCopy()
		patched.Spec.Active = ptr.To(false)
		return false, c.Patch(ctx, patched, client.MergeFromWithOptions(wl, client.MergeFromWithOptimisticLock{}))
	}
	_, err := Apply(ctx, w, wl, workload.Requeue(d))
	return err == nil, err
}
