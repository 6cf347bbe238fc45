package job

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// +kubebuilder:webhook:path=/mutate-batch-v1-job,mutating=true,failurePolicy=fail,sideEffects=None,groups=batch,resources=jobs,verbs=create,versions=v1,name=mjob.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-batch-v1-job,mutating=false,failurePolicy=fail,sideEffects=None,groups=batch,resources=jobs,verbs=create;update,versions=v1,name=vjob.berth.dev,admissionReviewVersions=v1

// podSetName is the name of a Job's only podset.
const podSetName = "main"

func init() {
	jobframework.Register(&jobframework.Integration{
		Name:        configv1alpha1.FrameworkBatchJob,
		GVK:         batchv1.SchemeGroupVersion.WithKind("Job"),
		NewJob:      func() jobframework.GenericJob { return &Job{} },
		Wrap:        wrap,
		AddToScheme: batchv1.AddToScheme,
		Parts:       []schema.GroupKind{{Kind: "Pod"}},
		OwnsPart:    ownsPod,
		Changed:     changed,
	})
}

// changed passes the updates of a Job that the job reconciler acts on:
// what its owner or Berth wrote (its metadata, its spec), its conditions,
// and its counts of ready, succeeded and failed pods. The Job controller's
// other status updates (its start time, its active and terminating pods)
// change nothing it reads, and cost no reconcile.
var changed = jobframework.UpdatesThat(func(before, after *batchv1.Job) bool {
	return jobframework.MetadataChanged(before, after) ||
		ptr.Deref(before.Status.Ready, 0) != ptr.Deref(after.Status.Ready, 0) ||
		before.Status.Succeeded != after.Status.Succeeded || before.Status.Failed != after.Status.Failed ||
		!equality.Semantic.DeepEqual(before.Status.Conditions, after.Status.Conditions) ||
		!equality.Semantic.DeepEqual(&before.Spec, &after.Spec)
})

// ownsPod reports whether the Job controller takes pod for one of the
// Job's: the Job runs, and its selector matches the pod. It makes no pod
// for a suspended Job, and releases one its selector does not match.
func ownsPod(owner, pod client.Object) bool {
	j, ok := owner.(*batchv1.Job)
	if !ok || ptr.Deref(j.Spec.Suspend, false) || j.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(pod.GetLabels()))
}

func wrap(obj client.Object) (jobframework.GenericJob, error) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return nil, fmt.Errorf("not a Job: %T", obj)
	}
	return (*Job)(j), nil
}

// Job is a batch/v1 Job as Berth sees it.
type Job batchv1.Job

var (
	_ jobframework.GenericJob          = (*Job)(nil)
	_ jobframework.JobWithPodSpecs     = (*Job)(nil)
	_ jobframework.JobWithPodSetPaths  = (*Job)(nil)
	_ jobframework.JobWithUpdateChecks = (*Job)(nil)
	_ jobframework.ElasticJob          = (*Job)(nil)
	_ jobframework.JobWithManagedBy    = (*Job)(nil)
)

// Object is the Job.
func (j *Job) Object() client.Object { return (*batchv1.Job)(j) }

// IsSuspended reports whether spec.suspend is true.
func (j *Job) IsSuspended() bool { return ptr.Deref(j.Spec.Suspend, false) }

// Suspend sets spec.suspend, and podReplacementPolicy Failed: a pod that
// is deleted is replaced only once it has stopped, so that a Job never runs
// more pods than it was admitted for while some terminate (the default,
// TerminatingOrFailed, starts the replacement at once).
func (j *Job) Suspend() {
	j.Spec.Suspend = ptr.To(true)
	j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
}

// ManagedBy is spec.managedBy.
func (j *Job) ManagedBy() *string { return j.Spec.ManagedBy }

// SetManagedBy sets spec.managedBy.
func (j *Job) SetManagedBy(by string) { j.Spec.ManagedBy = &by }

// ValidateOnUpdate refuses another podReplacementPolicy on a queued Job
// than the Failed that Berth set.
func (j *Job) ValidateOnUpdate(old jobframework.GenericJob) field.ErrorList {
	oldJob, ok := old.(*Job)
	if !ok || jobframework.QueueName(j) == "" || ptr.Deref(oldJob.Spec.PodReplacementPolicy, "") != batchv1.Failed ||
		ptr.Deref(j.Spec.PodReplacementPolicy, "") == batchv1.Failed {
		return nil
	}
	return field.ErrorList{field.NotSupported(field.NewPath("spec", "podReplacementPolicy"), ptr.Deref(j.Spec.PodReplacementPolicy, ""),
		[]batchv1.PodReplacementPolicy{batchv1.Failed})}
}

// PodSpecs is the spec of the Job's pod template.
func (j *Job) PodSpecs() []*corev1.PodSpec {
	return []*corev1.PodSpec{&j.Spec.Template.Spec}
}

// PodTemplates is the Job's pod template: a Job with berth.dev/elastic:
// "true" may change its parallelism once admitted.
func (j *Job) PodTemplates() []*corev1.PodTemplateSpec {
	return []*corev1.PodTemplateSpec{&j.Spec.Template}
}

// count is the number of pods the Job runs at once.
func (j *Job) count() int32 {
	n := ptr.Deref(j.Spec.Parallelism, 1)
	if c := j.Spec.Completions; c != nil && *c < n {
		n = *c
	}
	return n
}

// PodSets is one podset of count pods. The min-parallelism annotation
// allows partial admission.
func (j *Job) PodSets() ([]berthv1alpha1.PodSet, error) {
	ps := berthv1alpha1.PodSet{Name: podSetName, Count: j.count(), Template: *j.Spec.Template.DeepCopy()}
	if v, ok := j.Annotations[berthv1alpha1.JobMinParallelismAnnotation]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 || int32(n) > ps.Count {
			path := field.NewPath("metadata", "annotations").Key(berthv1alpha1.JobMinParallelismAnnotation)
			return nil, field.Invalid(path, v, fmt.Sprintf("must be a whole number between 1 and the job's parallelism %d", ps.Count))
		}
		if int32(n) < ps.Count {
			ps.MinCount = ptr.To(int32(n))
		}
	}
	return []berthv1alpha1.PodSet{ps}, nil
}

// PodSetPaths are where the Job's one podset is written: its parallelism
// and its template.
func (j *Job) PodSetPaths(string) (count, template *field.Path) {
	return field.NewPath("spec", "parallelism"), field.NewPath("spec", "template")
}

// RunWithPodSetsInfo unsuspends the Job with its admitted parallelism and
// scheduling directives.
func (j *Job) RunWithPodSetsInfo(infos []jobframework.PodSetInfo) error {
	if len(infos) != 1 {
		return fmt.Errorf("a Job has one podset, got %d", len(infos))
	}
	j.Spec.Suspend = ptr.To(false)
	j.setCount(infos[0].Count)
	jobframework.ApplyToTemplate(&j.Spec.Template, infos[0])
	return nil
}

// RestorePodSetsInfo puts back the Job's original parallelism and
// scheduling directives.
func (j *Job) RestorePodSetsInfo(infos []jobframework.PodSetInfo) bool {
	if len(infos) != 1 {
		return false
	}
	changed := j.count() != infos[0].Count
	j.setCount(infos[0].Count)
	return jobframework.ApplyToTemplate(&j.Spec.Template, infos[0]) || changed
}

// setCount sets the parallelism, unless the count is limited by the
// completions instead.
func (j *Job) setCount(n int32) {
	if j.count() != n {
		j.Spec.Parallelism = ptr.To(n)
	}
}

// Finished reports whether the Job completed or failed.
func (j *Job) Finished() (bool, bool, string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true, fmt.Sprintf("Job completed: %d pods succeeded", j.Status.Succeeded)
		case batchv1.JobFailed:
			return true, false, fmt.Sprintf("Job failed (%d pods succeeded, %d failed): %s", j.Status.Succeeded, j.Status.Failed, c.Message)
		}
	}
	return false, false, ""
}

// PodsReady reports whether as many pods are ready or done as run at once.
func (j *Job) PodsReady() bool {
	return ptr.Deref(j.Status.Ready, 0)+j.Status.Succeeded >= j.count()
}
