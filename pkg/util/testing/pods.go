package testing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// PodWrapper builds a plain Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a pod of one container with no requests. It has no
// scheduling gate: the webhook adds Berth's to the pods Berth holds.
func MakePod(name, ns string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}},
		},
	}}
}

// Obj returns the built Pod.
func (p *PodWrapper) Obj() *corev1.Pod { return &p.Pod }

// Queue sets the queue label.
func (p *PodWrapper) Queue(q string) *PodWrapper { return p.Label(berthv1alpha1.QueueNameLabel, q) }

// PriorityClass sets the priority class label.
func (p *PodWrapper) PriorityClass(c string) *PodWrapper {
	return p.Label(berthv1alpha1.PriorityClassLabel, c)
}

// Label sets a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Request sets a request of the container.
func (p *PodWrapper) Request(name corev1.ResourceName, q string) *PodWrapper {
	p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	return p
}

// OwnedBy makes the pod controlled by owner, of the given kind.
func (p *PodWrapper) OwnedBy(apiVersion, kind, name string, uid string) *PodWrapper {
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true),
	})
	return p
}

// Annotation sets an annotation.
func (p *PodWrapper) Annotation(k, v string) *PodWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

// Group puts the pod in the pod group name of total pods.
func (p *PodWrapper) Group(name, total string) *PodWrapper {
	return p.Label(berthv1alpha1.PodGroupNameLabel, name).Annotation(berthv1alpha1.PodGroupTotalCountAnnotation, total)
}

// Gated adds Berth's scheduling gate, as the webhook does.
func (p *PodWrapper) Gated() *PodWrapper {
	p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: berthv1alpha1.AdmissionGate})
	return p
}

// Bound binds the pod to node, as the scheduler does.
func (p *PodWrapper) Bound(node string) *PodWrapper {
	p.Spec.NodeName = node
	return p
}

// Phase sets the pod's phase, as the kubelet does.
func (p *PodWrapper) Phase(phase corev1.PodPhase) *PodWrapper {
	p.Status.Phase = phase
	return p
}
