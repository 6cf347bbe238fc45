package statefulset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/jobs/pod"
)

// owner makes the pod group of a StatefulSet's pods the StatefulSet's: its
// size is the StatefulSet's replicas.
var owner = pod.GroupOwner{
	APIVersion: appsv1.SchemeGroupVersion.String(),
	Kind:       "StatefulSet",
	Size:       replicas,
	Source:     jobframework.GroupSource{Object: &appsv1.StatefulSet{}, GroupOf: groupOf},
}

// replicas reads the StatefulSet ref's replicas; 0 when a StatefulSet
// created again under its name has another UID.
func replicas(ctx context.Context, c client.Reader, ns string, ref metav1.OwnerReference) (int32, error) {
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, sts); err != nil {
		return 0, err
	}
	if sts.UID != ref.UID {
		return 0, nil
	}
	return ptr.Deref(sts.Spec.Replicas, 1), nil
}

// groupOf is the group of a queued StatefulSet's pods: a change of its
// replicas changes the group's size.
func groupOf(obj client.Object) string {
	sts, ok := obj.(*appsv1.StatefulSet)
	if !ok || sts.Labels[berthv1alpha1.QueueNameLabel] == "" {
		return ""
	}
	return sts.Spec.Template.Labels[berthv1alpha1.PodGroupNameLabel]
}
