package jobframework

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// GenericJob is a job of some framework, admitted as one Workload.
type GenericJob interface {
	// Object is the job's API object; the methods below read and change it.
	Object() client.Object
	// IsSuspended reports whether the job is held from running.
	IsSuspended() bool
	// Suspend holds the job.
	Suspend()
	// RunWithPodSetsInfo unsuspends the job with each podset's admitted
	// count and scheduling directives, in the order of PodSets.
	RunWithPodSetsInfo(infos []PodSetInfo) error
	// RestorePodSetsInfo puts back the podsets' original count and
	// scheduling directives. It reports whether anything changed.
	RestorePodSetsInfo(infos []PodSetInfo) bool
	// Finished reports whether the job ended, whether it succeeded, and a
	// message saying how.
	Finished() (finished, succeeded bool, message string)
	// PodSets are the job's groups of pods as the Workload holds them.
	PodSets() ([]berthv1alpha1.PodSet, error)
	// PodsReady reports whether all the pods the job runs at once are ready.
	PodsReady() bool
}

// PodSetInfo is how one podset of a job runs: its count and what is added
// to its pod template.
type PodSetInfo struct {
	// Name is the podset's name.
	Name string
	// Count is the number of pods.
	Count int32
	// NodeSelector is the template's node selector.
	NodeSelector map[string]string
	// Tolerations are the template's tolerations.
	Tolerations []corev1.Toleration
	// Labels are the template's labels.
	Labels map[string]string
	// Annotations are the template's annotations.
	Annotations map[string]string
}
