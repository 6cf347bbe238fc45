package trainjob

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/jobs/jobset"
)

// +kubebuilder:webhook:path=/mutate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create,versions=v1alpha1,name=mtrainjob.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.berth.dev,admissionReviewVersions=v1

const (
	// ancestorLabel marks the replicated jobs of a runtime by the step of
	// the TrainJob they run; ancestorTrainer is the training itself.
	ancestorLabel   = "trainer.kubeflow.org/trainjob-ancestor-step"
	ancestorTrainer = "trainer"
	// nodeContainer is the container of the trainer step that
	// spec.trainer configures.
	nodeContainer = "node"
)

func init() {
	jobframework.Register(&jobframework.Integration{
		Name:        configv1alpha1.FrameworkTrainJob,
		GVK:         trainer.GroupVersion.WithKind("TrainJob"),
		NewJob:      func() jobframework.GenericJob { return &TrainJob{TrainJob: &trainer.TrainJob{}} },
		Wrap:        wrap,
		AddToScheme: trainer.AddToScheme,
		Parts:       []schema.GroupKind{{Group: jobsetapi.GroupVersion.Group, Kind: "JobSet"}},
		// Trainer names the TrainJob's JobSet after it.
		OwnsPart:            func(owner, js client.Object) bool { return js.GetName() == owner.GetName() },
		PartsCarryAdmission: true,
	})
}

func wrap(obj client.Object) (jobframework.GenericJob, error) {
	tj, ok := obj.(*trainer.TrainJob)
	if !ok {
		return nil, fmt.Errorf("not a TrainJob: %T", obj)
	}
	return &TrainJob{TrainJob: tj}, nil
}

// TrainJob is a TrainJob as Berth sees it.
type TrainJob struct {
	*trainer.TrainJob
	// rendered is its JobSet, as Trainer renders it or as it runs, once
	// Resolve has read it.
	rendered *jobsetapi.JobSet
}

var (
	_ jobframework.GenericJob            = (*TrainJob)(nil)
	_ jobframework.JobWithReferences     = (*TrainJob)(nil)
	_ jobframework.JobWithPodSetPaths    = (*TrainJob)(nil)
	_ jobframework.JobWithCreateDefaults = (*TrainJob)(nil)
	_ jobframework.JobWithUpdateChecks   = (*TrainJob)(nil)
)

// DefaultOnCreate hands the TrainJob's queue and priority labels down to
// its JobSet, through spec.labels, which Trainer gives the JobSet: its
// changes then reach Berth's JobSet webhooks, which see only objects with
// the queue label.
func (j *TrainJob) DefaultOnCreate() {
	jobframework.HandDownLabels(j.Labels, &j.Spec.Labels)
}

// ValidateOnUpdate refuses a spec.labels that stops naming the TrainJob's
// queue: the JobSet would leave the reach of Berth's webhooks.
func (j *TrainJob) ValidateOnUpdate(old jobframework.GenericJob) field.ErrorList {
	o, ok := old.(*TrainJob)
	q := jobframework.QueueName(j.TrainJob)
	if !ok || q == "" || j.Spec.Labels[berthv1alpha1.QueueNameLabel] == q ||
		o.Spec.Labels[berthv1alpha1.QueueNameLabel] != jobframework.QueueName(o.TrainJob) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "labels").Key(berthv1alpha1.QueueNameLabel), j.Spec.Labels[berthv1alpha1.QueueNameLabel],
		fmt.Sprintf("must be the TrainJob's queue, %q: Trainer gives it to the TrainJob's JobSet, which runs on the TrainJob's quota", q))}
}

// Object is the TrainJob.
func (j *TrainJob) Object() client.Object { return j.TrainJob }

// IsSuspended reports whether spec.suspend is true.
func (j *TrainJob) IsSuspended() bool { return ptr.Deref(j.Spec.Suspend, false) }

// Suspend sets spec.suspend: Trainer suspends the TrainJob's JobSet.
func (j *TrainJob) Suspend() { j.Spec.Suspend = ptr.To(true) }

// Resolve reads the JobSet the TrainJob runs: its own, once it runs;
// before, the one Trainer would render from the runtime it names.
func (j *TrainJob) Resolve(ctx context.Context, c client.Reader) error {
	if !j.IsSuspended() {
		js := &jobsetapi.JobSet{}
		err := c.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, js)
		switch {
		case err == nil && metav1.IsControlledBy(js, j.TrainJob) && !ptr.Deref(js.Spec.Suspend, false):
			j.rendered = js
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading the JobSet of TrainJob %s: %w", j.Name, err)
		}
	}
	rt, err := j.runtime(ctx, c)
	if err != nil {
		return err
	}
	j.rendered, err = render(j.TrainJob, rt)
	return err
}

// runtime is the spec of the training runtime the TrainJob names.
func (j *TrainJob) runtime(ctx context.Context, c client.Reader) (*trainer.TrainingRuntimeSpec, error) {
	ref := j.Spec.RuntimeRef
	path := field.NewPath("spec", "runtimeRef")
	if g := ptr.Deref(ref.APIGroup, trainer.GroupVersion.Group); g != trainer.GroupVersion.Group {
		return nil, field.NotSupported(path.Child("apiGroup"), g, []string{trainer.GroupVersion.Group})
	}
	var err error
	var spec *trainer.TrainingRuntimeSpec
	switch kind := ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind); kind {
	case trainer.ClusterTrainingRuntimeKind:
		rt := &trainer.ClusterTrainingRuntime{}
		spec = &rt.Spec
		err = c.Get(ctx, client.ObjectKey{Name: ref.Name}, rt)
	case trainer.TrainingRuntimeKind:
		rt := &trainer.TrainingRuntime{}
		spec = &rt.Spec
		err = c.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: ref.Name}, rt)
	default:
		return nil, field.NotSupported(path.Child("kind"), kind, []string{trainer.ClusterTrainingRuntimeKind, trainer.TrainingRuntimeKind})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, field.NotFound(path.Child("name"), ref.Name)
	case err != nil:
		return nil, fmt.Errorf("reading the runtime of TrainJob %s: %w", j.Name, err)
	}
	return spec, nil
}

// render is the JobSet Trainer makes of tj and its runtime, as far as its
// pods go: the runtime's template, each replicated job's pod spec with
// the podSpecOverrides that name it merged in (a strategic merge, as
// Trainer does), and the trainer step's one Job of numNodes pods whose
// node container asks for resourcesPerNode.
func render(tj *trainer.TrainJob, rt *trainer.TrainingRuntimeSpec) (*jobsetapi.JobSet, error) {
	js := &jobsetapi.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace},
		Spec:       *rt.Template.Spec.DeepCopy(),
	}
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		if err := applyOverrides(tj, rj, i); err != nil {
			return nil, err
		}
		if rj.Template.Labels[ancestorLabel] != ancestorTrainer {
			continue
		}
		n := ptr.Deref(rj.Template.Spec.Parallelism, 1)
		if rt.MLPolicy != nil {
			n = ptr.Deref(rt.MLPolicy.NumNodes, 1)
		}
		if tj.Spec.Trainer != nil && tj.Spec.Trainer.NumNodes != nil {
			n = *tj.Spec.Trainer.NumNodes
		}
		rj.Replicas = 1
		rj.Template.Spec.Parallelism, rj.Template.Spec.Completions = ptr.To(n), ptr.To(n)
		if res := resourcesPerNode(tj); res != nil {
			for c := range rj.Template.Spec.Template.Spec.Containers {
				if ctr := &rj.Template.Spec.Template.Spec.Containers[c]; ctr.Name == nodeContainer {
					ctr.Resources = *res
				}
			}
		}
	}
	return js, nil
}

// resourcesPerNode is what the trainer's node container asks for, when
// the TrainJob says.
func resourcesPerNode(tj *trainer.TrainJob) *corev1.ResourceRequirements {
	t := tj.Spec.Trainer
	if t == nil || t.ResourcesPerNode == nil || (t.ResourcesPerNode.Limits == nil && t.ResourcesPerNode.Requests == nil) {
		return nil
	}
	return &corev1.ResourceRequirements{Limits: t.ResourcesPerNode.Limits, Requests: t.ResourcesPerNode.Requests}
}

// applyOverrides merges into rj's pod spec the TrainJob's podSpecOverrides
// that target it.
func applyOverrides(tj *trainer.TrainJob, rj *jobsetapi.ReplicatedJob, index int) error {
	for k, o := range tj.Spec.PodSpecOverrides {
		if !slices.ContainsFunc(o.TargetJobs, func(t trainer.PodSpecOverrideTargetJob) bool { return t.Name == rj.Name }) {
			continue
		}
		path := field.NewPath("spec", "podSpecOverrides").Index(k)
		patch, err := json.Marshal(o)
		if err != nil {
			return field.Invalid(path, "", err.Error())
		}
		spec, err := json.Marshal(rj.Template.Spec.Template.Spec)
		if err != nil {
			return fmt.Errorf("encoding replicated job %d of the runtime: %w", index, err)
		}
		merged, err := strategicpatch.StrategicMergePatch(spec, patch, corev1.PodSpec{})
		if err != nil {
			return field.Invalid(path, "", fmt.Sprintf("cannot be merged into replicated job %s: %v", rj.Name, err))
		}
		out := corev1.PodSpec{}
		if err := json.Unmarshal(merged, &out); err != nil {
			return field.Invalid(path, "", fmt.Sprintf("cannot be merged into replicated job %s: %v", rj.Name, err))
		}
		rj.Template.Spec.Template.Spec = out
	}
	return nil
}

// PodSets are the JobSet's: one per replicated job, of its replicas times
// the pods each of its Jobs runs at once.
func (j *TrainJob) PodSets() ([]berthv1alpha1.PodSet, error) {
	if j.rendered == nil {
		return nil, fmt.Errorf("the JobSet of TrainJob %s was not read", j.Name)
	}
	return (*jobset.JobSet)(j.rendered).PodSets()
}

// PodSetPaths are where a podset is written: the trainer step's in
// spec.trainer, the others' in the runtime.
func (j *TrainJob) PodSetPaths(podSet string) (count, template *field.Path) {
	if j.rendered != nil && isTrainerStep(j.rendered, podSet) {
		return field.NewPath("spec", "trainer", "numNodes"), field.NewPath("spec", "trainer")
	}
	ref := field.NewPath("spec", "runtimeRef")
	return ref, ref
}

// isTrainerStep reports whether the replicated job podSet of js is the
// trainer step.
func isTrainerStep(js *jobsetapi.JobSet, podSet string) bool {
	for i := range js.Spec.ReplicatedJobs {
		if rj := &js.Spec.ReplicatedJobs[i]; rj.Name == podSet {
			return rj.Template.Labels[ancestorLabel] == ancestorTrainer
		}
	}
	return false
}

// RunWithPodSetsInfo unsuspends the TrainJob. The admission's labels,
// node selectors and tolerations are written into its JobSet as Trainer
// unsuspends that (see the package doc): Trainer gives the JobSet's pods
// none of the TrainJob's labels.
func (j *TrainJob) RunWithPodSetsInfo([]jobframework.PodSetInfo) error {
	j.Spec.Suspend = ptr.To(false)
	return nil
}

// RestorePodSetsInfo changes nothing: the TrainJob carries no admission.
func (j *TrainJob) RestorePodSetsInfo([]jobframework.PodSetInfo) bool { return false }

// Finished reports whether the TrainJob completed or failed.
func (j *TrainJob) Finished() (bool, bool, string) {
	if c := meta.FindStatusCondition(j.Status.Conditions, trainer.TrainJobComplete); c != nil && c.Status == metav1.ConditionTrue {
		return true, true, "TrainJob completed"
	}
	if c := meta.FindStatusCondition(j.Status.Conditions, trainer.TrainJobFailed); c != nil && c.Status == metav1.ConditionTrue {
		return true, false, "TrainJob failed: " + c.Message
	}
	return false, false, ""
}

// PodsReady reports whether every replicated job of the TrainJob has a
// Job ready or done, and none is suspended, as Trainer reports them.
func (j *TrainJob) PodsReady() bool {
	if len(j.Status.JobsStatus) == 0 {
		return false
	}
	for _, s := range j.Status.JobsStatus {
		if s.Ready+s.Succeeded == 0 || s.Suspended > 0 {
			return false
		}
	}
	return true
}
