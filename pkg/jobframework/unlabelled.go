package jobframework

import (
	"context"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// takesUnlabelled reports whether Berth takes obj, a job without the queue
// label, when its namespace has a default LocalQueue or
// ManageJobsWithoutQueueName is set: only in the namespaces
// ManagedNamespaces selects, and never a part of a job Berth holds (a
// queued JobSet's Jobs, a queued Job's pods), which waits with that job.
// An owner reference is the creator's to write: one naming an object of
// another kind, or a job that is not there or not held, lets nothing run
// around the quota.
func (o Options) takesUnlabelled(ctx context.Context, c client.Reader, obj client.Object) (bool, error) {
	return o.takes(ctx, c, obj, ownerDepth)
}

// ownerDepth is how many controller references Berth follows up from a
// job: a pod's Job's JobSet is two.
const ownerDepth = 2

func (o Options) takes(ctx context.Context, c client.Reader, obj client.Object, depth int) (bool, error) {
	if held, err := o.heldOwner(ctx, c, obj, depth); err != nil || held {
		return false, err
	}
	return NamespaceSelected(ctx, c, obj.GetNamespace(), o.ManagedNamespaces)
}

// HeldOwner reports whether obj is a part of a job that Berth holds: its
// controller is an object of an enabled kind whose Parts include obj's
// kind, that exists with the UID the reference names, and that is queued
// itself, is a part of a held job (a JobSet's Jobs, whose pods wait with
// the JobSet), or is held for ManageJobsWithoutQueueName. Such a part
// waits with its job, not by itself.
func (o Options) HeldOwner(ctx context.Context, c client.Reader, obj client.Object) (bool, error) {
	return o.heldOwner(ctx, c, obj, ownerDepth)
}

func (o Options) heldOwner(ctx context.Context, c client.Reader, obj client.Object, depth int) (bool, error) {
	if depth == 0 {
		return false, nil
	}
	owner, _, err := controllerJob(ctx, c, obj, o)
	if err != nil || owner == nil {
		return false, err
	}
	if QueueName(owner) != "" {
		return true, nil
	}
	if up, err := o.heldOwner(ctx, c, owner, depth-1); err != nil || up {
		return up, err
	}
	if !o.ManageJobsWithoutQueueName {
		return false, nil
	}
	// Unlabelled and a part of no held job: held itself.
	return NamespaceSelected(ctx, c, owner.GetNamespace(), o.ManagedNamespaces)
}

// controllerJob is the job obj is a part of: its controller, of an
// enabled kind whose Parts include obj's kind, that exists with the UID
// the reference names and whose controller takes obj for its own
// (OwnsPart). It is nil, with no error, when obj is a part of no job.
func controllerJob(ctx context.Context, c client.Reader, obj client.Object, o Options) (client.Object, *Integration, error) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return nil, nil, nil
	}
	i, ok := ForKind(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	if !ok || !o.Enables(i.Name) || !slices.Contains(i.Parts, kindOf(obj)) {
		return nil, nil, nil
	}
	owner := ownerObject(i)
	if err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, owner); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading the %s that controls %s: %w", ref.Kind, obj.GetName(), err)
	}
	if owner.GetUID() != ref.UID {
		// The cache may hold the one its name had before: the one the
		// reference names may have been created a moment ago.
		if err := GetLive(ctx, c, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, owner); client.IgnoreNotFound(err) != nil {
			return nil, nil, fmt.Errorf("reading the %s that controls %s: %w", ref.Kind, obj.GetName(), err)
		} else if err != nil {
			return nil, nil, nil
		}
	}
	if owner.GetUID() != ref.UID || (i.OwnsPart != nil && !i.OwnsPart(owner, obj)) {
		return nil, nil, nil
	}
	return owner, i, nil
}

// ownerObject is an empty object of i's kind to read into: its job's, or,
// for a kind Berth reads only as JSON (a LeaderWorkerSet), an
// unstructured one.
func ownerObject(i *Integration) client.Object {
	if i.NewJob != nil {
		return i.NewJob().Object()
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(i.GVK)
	return u
}

// kindOf is the kind of obj: its TypeMeta's, or, for a typed object read
// without it, its type's among the kinds Berth knows.
func kindOf(obj client.Object) schema.GroupKind {
	if gk := obj.GetObjectKind().GroupVersionKind().GroupKind(); gk.Kind != "" {
		return gk
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	gvk, err := apiutil.GVKForObject(obj, kinds)
	if err != nil {
		return schema.GroupKind{}
	}
	return gvk.GroupKind()
}

// NamespaceSelected reports whether sel selects namespace ns; a nil sel
// selects every namespace.
func NamespaceSelected(ctx context.Context, c client.Reader, ns string, sel labels.Selector) (bool, error) {
	if sel == nil {
		return true, nil
	}
	namespace := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, namespace); err != nil {
		return false, fmt.Errorf("reading the labels of namespace %s: %w", ns, err)
	}
	return sel.Matches(labels.Set(namespace.Labels)), nil
}

// defaultQueueExists reports whether namespace ns has a LocalQueue named
// default.
func defaultQueueExists(ctx context.Context, c client.Reader, ns string) (bool, error) {
	// From the cache: every job created in a managed namespace passes here,
	// and a default LocalQueue made a moment before is a race its maker
	// can see (the job runs unqueued, as it would have a moment earlier).
	queues := &berthv1alpha1.LocalQueueList{}
	if err := c.List(ctx, queues, client.InNamespace(ns)); err != nil {
		return false, fmt.Errorf("listing the LocalQueues of namespace %s: %w", ns, err)
	}
	return slices.ContainsFunc(queues.Items, func(q berthv1alpha1.LocalQueue) bool {
		return q.Name == berthv1alpha1.DefaultLocalQueueName
	}), nil
}

// unlabelledQueue is the queue of obj, a new job without the queue label:
// its namespace's default LocalQueue, whose name it then writes in the
// label, or none. held says whether Berth holds it: with a queue, or with
// ManageJobsWithoutQueueName.
func (o Options) unlabelledQueue(ctx context.Context, c client.Reader, obj client.Object) (queue string, held bool, err error) {
	if taken, err := o.takesUnlabelled(ctx, c, obj); err != nil || !taken {
		return "", false, err
	}
	found, err := defaultQueueExists(ctx, c, obj.GetNamespace())
	if err != nil || !found {
		return "", o.ManageJobsWithoutQueueName, err
	}
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[berthv1alpha1.QueueNameLabel] = berthv1alpha1.DefaultLocalQueueName
	obj.SetLabels(l)
	return berthv1alpha1.DefaultLocalQueueName, true, nil
}

// QueueLabelRemoval refuses taking the queue label off a job where the
// namespace's default LocalQueue takes the jobs that name none: the job
// would leave every queue, and run around the quota the default is there
// to keep.
func (o Options) QueueLabelRemoval(ctx context.Context, c client.Reader, oldObj, newObj client.Object) (*field.Error, error) {
	if QueueName(oldObj) == "" || QueueName(newObj) != "" {
		return nil, nil
	}
	if taken, err := o.takesUnlabelled(ctx, c, newObj); err != nil || !taken {
		return nil, err
	}
	if found, err := defaultQueueExists(ctx, c, newObj.GetNamespace()); err != nil || !found {
		return nil, err
	}
	return field.Forbidden(field.NewPath("metadata", "labels").Key(berthv1alpha1.QueueNameLabel), fmt.Sprintf(
		"cannot be removed: LocalQueue %s takes the jobs of namespace %s that name no queue; name another queue instead",
		berthv1alpha1.DefaultLocalQueueName, newObj.GetNamespace())), nil
}

// Holds reports whether Berth holds obj, an existing job: one with the queue
// label, or, with ManageJobsWithoutQueueName, one without that Berth takes.
func (o Options) Holds(ctx context.Context, c client.Reader, obj client.Object) (bool, error) {
	if QueueName(obj) != "" {
		return true, nil
	}
	if !o.ManageJobsWithoutQueueName {
		return false, nil
	}
	return o.takesUnlabelled(ctx, c, obj)
}

// DefaultQueue writes the namespace's default LocalQueue in the queue label
// of obj, a new job of a kind whose pods carry its labels (a Deployment, a
// StatefulSet, a LeaderWorkerSet), when it names no queue and Berth takes
// it.
func (o Options) DefaultQueue(ctx context.Context, c client.Reader, obj client.Object) error {
	if QueueName(obj) != "" {
		return nil
	}
	_, _, err := o.unlabelledQueue(ctx, c, obj)
	return err
}

// DefaultQueueOnAdmission does, for the webhooks of the kinds whose pods
// carry their labels, what a default LocalQueue asks of a request: writes
// it on obj at creation (DefaultQueue), and refuses taking the label off
// on update (QueueLabelRemoval), naming the field.
func (o Options) DefaultQueueOnAdmission(ctx context.Context, c client.Reader, req admission.Request, obj client.Object) error {
	switch req.Operation {
	case admissionv1.Create:
		return o.DefaultQueue(ctx, c, obj)
	case admissionv1.Update:
		old := &unstructured.Unstructured{}
		if err := old.UnmarshalJSON(req.OldObject.Raw); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		ferr, err := o.QueueLabelRemoval(ctx, c, old, obj)
		if err != nil || ferr == nil {
			return err
		}
		return apierrors.NewInvalid(schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}, obj.GetName(), field.ErrorList{ferr})
	}
	return nil
}
