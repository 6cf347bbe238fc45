package podset

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// The label and annotation keys are copied from apis/berth/v1alpha1
// (WorkloadLabel, PodSetLabel and the annotations named below), which is
// their source of truth. They are repeated here so that this module does not
// require the controller's module.
const (
	// WorkloadLabel is set on the pods of an admitted job to the name of
	// its Workload.
	WorkloadLabel = "berth.dev/workload"
	// PodSetLabel is set on the pods of an admitted job to the name of
	// their podset.
	PodSetLabel = "berth.dev/podset"
	// SizeAnnotation is set on the pods of an admitted job to the number of
	// pods admitted for their podset (PodSetSizeAnnotation).
	SizeAnnotation = "berth.dev/podset-size"
	// TopologyAssignmentAnnotation is set on the pods of a podset admitted
	// on a Topology to its topologyAssignment as JSON
	// (PodSetTopologyAssignmentAnnotation).
	TopologyAssignmentAnnotation = "berth.dev/podset-topology-assignment"
)

// Key names the gang a pod belongs to: the pods of one podset of one
// Workload. Workloads are namespaced, so the namespace is part of the key.
type Key struct {
	Namespace string
	Workload  string
	PodSet    string
}

// String returns the key as namespace/workload/podset, for logs and messages.
func (k Key) String() string {
	return k.Namespace + "/" + k.Workload + "/" + k.PodSet
}

// KeyOf returns the gang of pod, and false when the pod does not carry both
// Berth labels (it was not admitted by Berth and is not part of a gang).
func KeyOf(pod *corev1.Pod) (Key, bool) {
	workload, okW := pod.Labels[WorkloadLabel]
	podSet, okP := pod.Labels[PodSetLabel]
	if !okW || !okP || workload == "" || podSet == "" {
		return Key{}, false
	}
	return Key{Namespace: pod.Namespace, Workload: workload, PodSet: podSet}, true
}

// SameWorkload reports whether pod belongs to the Workload namespace/workload,
// whatever its podset.
func SameWorkload(pod *corev1.Pod, namespace, workload string) bool {
	return pod.Namespace == namespace && workload != "" && pod.Labels[WorkloadLabel] == workload
}

// Size is the number of pods admitted for pod's podset, from its
// annotation; false when the annotation is missing or not a positive
// number.
func Size(pod *corev1.Pod) (int, bool) {
	n, err := strconv.Atoi(pod.Annotations[SizeAnnotation])
	return n, err == nil && n > 0
}
