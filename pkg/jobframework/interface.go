package jobframework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// JobWithManagedBy is a job whose spec.managedBy hands it to another
// controller than its kind's: the webhook sets it to
// berth.dev/multicluster on a new job of a ClusterQueue that dispatches to
// worker clusters, so that it runs there, not here.
type JobWithManagedBy interface {
	// ManagedBy is spec.managedBy, nil when unset.
	ManagedBy() *string
	// SetManagedBy sets spec.managedBy.
	SetManagedBy(string)
}

// ComposedJob is a job made of several objects of its kind, such as the
// pods of a pod group, admitted as one Workload. Object is one of them, the
// one whose labels name the queue and the priority.
type ComposedJob interface {
	GenericJob
	// Members are the objects the job is made of, to tell each of them
	// what happens to it.
	Members() []client.Object
	// WorkloadName is the name of the job's Workload.
	WorkloadName() string
	// WorkloadLabels are the labels of the Workload by which the
	// controller finds the job again from it.
	WorkloadLabels() map[string]string
	// Owners are the objects the Workload belongs to: it is
	// garbage-collected once all of them are gone, and must not be before.
	Owners() []metav1.OwnerReference
	// Complete reports whether all the job's members exist, so that its
	// pod sets are whole: a job gets its Workload only then, and its pod
	// sets are compared with its Workload's only then. When it is not,
	// why says what is missing, and invalid reports whether that is an
	// error that only the user can correct.
	Complete() (complete bool, why string, invalid bool)
	// Runs reports whether any member runs; IsSuspended, whether any is
	// held.
	Runs() bool
	// Update writes the members that RunWithPodSetsInfo changed.
	Update(ctx context.Context, c client.Writer) error
	// DeleteRunning deletes the members that run: they cannot be held
	// again, and their owner creates them again, held.
	DeleteRunning(ctx context.Context, c client.Writer) error
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
	// Affinity is the template's affinity.
	Affinity *corev1.Affinity
	// NodeRequirements are what admission adds to the required node
	// affinity's terms (already in Affinity), for integrations that narrow
	// the affinity of pods or templates of their own (NarrowAffinity).
	NodeRequirements []corev1.NodeSelectorRequirement
	// Labels are the template's labels.
	Labels map[string]string
	// Annotations are the template's annotations.
	Annotations map[string]string
	// CheckLabels and CheckAnnotations are what admission checks add to
	// the pods (already in Labels and Annotations), for integrations that
	// take only Berth's own from those.
	CheckLabels, CheckAnnotations map[string]string
}
