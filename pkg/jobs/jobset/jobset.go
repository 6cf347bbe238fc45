package jobset

import (
	"fmt"
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// +kubebuilder:webhook:path=/mutate-jobset-x-k8s-io-v1alpha2-jobset,mutating=true,failurePolicy=fail,sideEffects=None,groups=jobset.x-k8s.io,resources=jobsets,verbs=create;update,versions=v1alpha2,name=mjobset.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-jobset-x-k8s-io-v1alpha2-jobset,mutating=false,failurePolicy=fail,sideEffects=None,groups=jobset.x-k8s.io,resources=jobsets,verbs=create;update,versions=v1alpha2,name=vjobset.berth.dev,admissionReviewVersions=v1

func init() {
	jobframework.Register(&jobframework.Integration{
		Name:        configv1alpha1.FrameworkJobSet,
		GVK:         jobsetapi.GroupVersion.WithKind("JobSet"),
		NewJob:      func() jobframework.GenericJob { return &JobSet{} },
		Wrap:        wrap,
		AddToScheme: jobsetapi.AddToScheme,
		Parts:       []schema.GroupKind{{Group: "batch", Kind: "Job"}},
		// The JobSet controller labels the Jobs it makes with its name.
		OwnsPart: func(owner, job client.Object) bool {
			return job.GetLabels()[jobsetapi.JobSetNameKey] == owner.GetName()
		},
	})
}

func wrap(obj client.Object) (jobframework.GenericJob, error) {
	js, ok := obj.(*jobsetapi.JobSet)
	if !ok {
		return nil, fmt.Errorf("not a JobSet: %T", obj)
	}
	return (*JobSet)(js), nil
}

// JobSet is a JobSet as Berth sees it.
type JobSet jobsetapi.JobSet

var (
	_ jobframework.GenericJob          = (*JobSet)(nil)
	_ jobframework.JobWithPodSpecs     = (*JobSet)(nil)
	_ jobframework.JobWithPodSetPaths  = (*JobSet)(nil)
	_ jobframework.JobWithPodTemplates = (*JobSet)(nil)
	_ jobframework.JobWithManagedBy    = (*JobSet)(nil)
)

// maxPodSets is how many podsets a Workload has at most.
const maxPodSets = 8

// Object is the JobSet.
func (j *JobSet) Object() client.Object { return (*jobsetapi.JobSet)(j) }

// IsSuspended reports whether spec.suspend is true.
func (j *JobSet) IsSuspended() bool { return ptr.Deref(j.Spec.Suspend, false) }

// Suspend sets spec.suspend.
func (j *JobSet) Suspend() { j.Spec.Suspend = ptr.To(true) }

// ManagedBy is spec.managedBy.
func (j *JobSet) ManagedBy() *string { return j.Spec.ManagedBy }

// SetManagedBy sets spec.managedBy.
func (j *JobSet) SetManagedBy(by string) { j.Spec.ManagedBy = &by }

// PodSpecs are the specs of the replicated jobs' pod templates.
func (j *JobSet) PodSpecs() []*corev1.PodSpec {
	out := make([]*corev1.PodSpec, 0, len(j.Spec.ReplicatedJobs))
	for i := range j.Spec.ReplicatedJobs {
		out = append(out, &j.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec)
	}
	return out
}

// podsPerJob is the number of pods one Job of a replicated job runs at once.
func podsPerJob(spec *batchv1.JobSpec) int32 {
	n := ptr.Deref(spec.Parallelism, 1)
	if c := spec.Completions; c != nil && *c < n {
		n = *c
	}
	return n
}

// PodSets is one podset per replicated job, of replicas times the pods
// each of its Jobs runs at once.
func (j *JobSet) PodSets() ([]berthv1alpha1.PodSet, error) {
	if n := len(j.Spec.ReplicatedJobs); n > maxPodSets {
		return nil, field.TooMany(field.NewPath("spec", "replicatedJobs"), n, maxPodSets)
	}
	out := make([]berthv1alpha1.PodSet, 0, len(j.Spec.ReplicatedJobs))
	for i := range j.Spec.ReplicatedJobs {
		rj := &j.Spec.ReplicatedJobs[i]
		count := int64(max(rj.Replicas, 1)) * int64(podsPerJob(&rj.Template.Spec))
		if count > math.MaxInt32 {
			return nil, field.Invalid(field.NewPath("spec", "replicatedJobs").Index(i).Child("replicas"), rj.Replicas,
				fmt.Sprintf("%d replicas of %d pods each is %d pods, more than a podset may have (%d)", rj.Replicas, podsPerJob(&rj.Template.Spec), count, math.MaxInt32))
		}
		out = append(out, berthv1alpha1.PodSet{
			Name:     rj.Name,
			Count:    int32(count),
			Template: *rj.Template.Spec.Template.DeepCopy(),
		})
	}
	return out, nil
}

// PodSetPaths are where a replicated job is written: its replicas (the
// count is replicas times its Jobs' parallelism) and its pod template.
func (j *JobSet) PodSetPaths(podSet string) (count, template *field.Path) {
	for i := range j.Spec.ReplicatedJobs {
		if j.Spec.ReplicatedJobs[i].Name == podSet {
			rj := field.NewPath("spec", "replicatedJobs").Index(i)
			return rj.Child("replicas"), rj.Child("template", "spec", "template")
		}
	}
	return field.NewPath("spec", "replicatedJobs"), field.NewPath("spec", "replicatedJobs")
}

// PodTemplate is the pod template of the replicated job named podSet.
func (j *JobSet) PodTemplate(podSet string) *corev1.PodTemplateSpec {
	for i := range j.Spec.ReplicatedJobs {
		if j.Spec.ReplicatedJobs[i].Name == podSet {
			return &j.Spec.ReplicatedJobs[i].Template.Spec.Template
		}
	}
	return nil
}

// RunWithPodSetsInfo unsuspends the JobSet with each replicated job's
// scheduling directives.
func (j *JobSet) RunWithPodSetsInfo(infos []jobframework.PodSetInfo) error {
	if len(infos) != len(j.Spec.ReplicatedJobs) {
		return fmt.Errorf("the JobSet has %d replicated jobs, got %d podsets", len(j.Spec.ReplicatedJobs), len(infos))
	}
	j.Spec.Suspend = ptr.To(false)
	for i := range j.Spec.ReplicatedJobs {
		jobframework.ApplyToTemplate(&j.Spec.ReplicatedJobs[i].Template.Spec.Template, infos[i])
	}
	return nil
}

// RestorePodSetsInfo puts back the original scheduling directives.
func (j *JobSet) RestorePodSetsInfo(infos []jobframework.PodSetInfo) bool {
	if len(infos) != len(j.Spec.ReplicatedJobs) {
		return false
	}
	changed := false
	for i := range j.Spec.ReplicatedJobs {
		changed = jobframework.ApplyToTemplate(&j.Spec.ReplicatedJobs[i].Template.Spec.Template, infos[i]) || changed
	}
	return changed
}

// Finished reports whether the JobSet completed or failed.
func (j *JobSet) Finished() (bool, bool, string) {
	if c := meta.FindStatusCondition(j.Status.Conditions, string(jobsetapi.JobSetCompleted)); c != nil && c.Status == "True" {
		return true, true, "JobSet completed"
	}
	if c := meta.FindStatusCondition(j.Status.Conditions, string(jobsetapi.JobSetFailed)); c != nil && c.Status == "True" {
		return true, false, "JobSet failed: " + c.Message
	}
	return false, false, ""
}

// PodsReady reports whether every Job of every replicated job is ready
// or done.
func (j *JobSet) PodsReady() bool {
	ready := map[string]int32{}
	for _, s := range j.Status.ReplicatedJobsStatus {
		ready[s.Name] = s.Ready + s.Succeeded
	}
	for _, rj := range j.Spec.ReplicatedJobs {
		if ready[rj.Name] < rj.Replicas {
			return false
		}
	}
	return true
}
