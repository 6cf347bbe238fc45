package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// clusterQueueFor finds the ClusterQueue a pending workload is queued in.
// When there is none it returns a message for a person saying why: the
// LocalQueue or ClusterQueue is missing, stopped, being deleted, or does
// not take workloads from the workload's namespace.
func clusterQueueFor(ctx context.Context, c client.Reader, wl *berthv1alpha1.Workload) (berthv1alpha1.ClusterQueueReference, string, error) {
	if wl.Spec.QueueName == "" {
		return "", "The workload has no spec.queueName", nil
	}
	lq := &berthv1alpha1.LocalQueue{}
	if msg, err := get(ctx, c, types.NamespacedName{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}, lq,
		"LocalQueue %s does not exist in namespace %s", wl.Spec.QueueName, wl.Namespace); msg != "" || err != nil {
		return "", msg, err
	}
	switch {
	case !lq.DeletionTimestamp.IsZero():
		return "", fmt.Sprintf("LocalQueue %s is being deleted", lq.Name), nil
	case lq.Spec.StopPolicy != "" && lq.Spec.StopPolicy != berthv1alpha1.None:
		return "", fmt.Sprintf("LocalQueue %s is stopped (stopPolicy %s)", lq.Name, lq.Spec.StopPolicy), nil
	}
	cq := &berthv1alpha1.ClusterQueue{}
	if msg, err := get(ctx, c, types.NamespacedName{Name: string(lq.Spec.ClusterQueue)}, cq,
		"ClusterQueue %s of LocalQueue %s does not exist", lq.Spec.ClusterQueue, lq.Name); msg != "" || err != nil {
		return "", msg, err
	}
	if !cq.DeletionTimestamp.IsZero() {
		return "", fmt.Sprintf("ClusterQueue %s is being deleted", cq.Name), nil
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: wl.Namespace}, ns, client.UnsafeDisableDeepCopy); err != nil {
		return "", "", err
	}
	if msg, err := namespaceMismatch(cq, ns); msg != "" || err != nil {
		return "", msg, err
	}
	if msg, err := sliceElsewhere(ctx, c, wl, cq.Name); msg != "" || err != nil {
		return "", msg, err
	}
	return berthv1alpha1.ClusterQueueReference(cq.Name), "", nil
}

// sliceElsewhere says why a slice of an elastic job cannot be admitted in
// ClusterQueue cq, if it cannot: its job holds quota in another (its
// LocalQueue was pointed elsewhere since), into which the slice's quota
// would be taken.
func sliceElsewhere(ctx context.Context, c client.Reader, wl *berthv1alpha1.Workload, cq string) (string, error) {
	of := wl.Labels[berthv1alpha1.SliceOfLabel]
	if of == "" {
		return "", nil
	}
	job := &berthv1alpha1.Workload{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: of}, job, client.UnsafeDisableDeepCopy); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if adm := job.Status.Admission; adm != nil && workload.HasQuotaReservation(job) && string(adm.ClusterQueue) != cq {
		return fmt.Sprintf("The slice grows Workload %s, which holds quota in ClusterQueue %s; LocalQueue %s now points to ClusterQueue %s",
			of, adm.ClusterQueue, wl.Spec.QueueName, cq), nil
	}
	return "", nil
}

// get reads obj, returning the message notFound formats with args when it
// does not exist.
func get(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object, notFound string, args ...any) (string, error) {
	// Read only: the cache's own object, not a copy.
	if err := c.Get(ctx, key, obj, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf(notFound, args...), nil
		}
		return "", err
	}
	return "", nil
}

// namespaceMismatch says why cq does not take workloads from ns, if it
// does not.
func namespaceMismatch(cq *berthv1alpha1.ClusterQueue, ns *corev1.Namespace) (string, error) {
	if cq.Spec.NamespaceSelector == nil {
		return fmt.Sprintf("ClusterQueue %s takes workloads from no namespace: its namespaceSelector is null", cq.Name), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(cq.Spec.NamespaceSelector)
	if err != nil {
		return fmt.Sprintf("ClusterQueue %s has an invalid namespaceSelector: %v", cq.Name, err), nil
	}
	if !sel.Matches(labels.Set(ns.Labels)) {
		return fmt.Sprintf("Namespace %s does not match the namespaceSelector of ClusterQueue %s (%s)", ns.Name, cq.Name, sel), nil
	}
	return "", nil
}
