package rayjob

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/jobs/raycluster"
)

// +kubebuilder:webhook:path=/mutate-ray-io-v1-rayjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=create,versions=v1,name=mrayjob.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-ray-io-v1-rayjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayjobs,verbs=create;update,versions=v1,name=vrayjob.berth.dev,admissionReviewVersions=v1

func init() {
	jobframework.Register(&jobframework.Integration{
		Name:        configv1alpha1.FrameworkRayJob,
		GVK:         rayv1.GroupVersion.WithKind("RayJob"),
		NewJob:      func() jobframework.GenericJob { return &RayJob{} },
		Wrap:        wrap,
		AddToScheme: rayv1.AddToScheme,
		// KubeRay's cluster and submitter Job.
		Parts:    []schema.GroupKind{{Group: rayv1.GroupVersion.Group, Kind: "RayCluster"}, {Group: "batch", Kind: "Job"}},
		OwnsPart: ownsPart,
	})
}

// ownsPart reports whether KubeRay takes part for the RayJob's: the
// cluster its status names (written before the cluster is made), or the
// submitter Job, named after the RayJob.
func ownsPart(owner, part client.Object) bool {
	rj, ok := owner.(*rayv1.RayJob)
	if !ok {
		return false
	}
	switch part.(type) {
	case *rayv1.RayCluster:
		return rj.Status.RayClusterName != "" && part.GetName() == rj.Status.RayClusterName
	case *batchv1.Job:
		return part.GetName() == rj.Name
	}
	return false
}

func wrap(obj client.Object) (jobframework.GenericJob, error) {
	rj, ok := obj.(*rayv1.RayJob)
	if !ok {
		return nil, fmt.Errorf("not a RayJob: %T", obj)
	}
	return (*RayJob)(rj), nil
}

// RayJob is a RayJob as Berth sees it.
type RayJob rayv1.RayJob

var (
	_ jobframework.GenericJob         = (*RayJob)(nil)
	_ jobframework.JobWithPodSpecs    = (*RayJob)(nil)
	_ jobframework.JobWithPodSetPaths = (*RayJob)(nil)
)

// SubmitterPodSet is the name of the podset of KubeRay's submitter pod.
const SubmitterPodSet = "submitter"

// Object is the RayJob.
func (j *RayJob) Object() client.Object { return (*rayv1.RayJob)(j) }

// IsSuspended reports whether spec.suspend is true.
func (j *RayJob) IsSuspended() bool { return j.Spec.Suspend }

// Suspend sets spec.suspend: KubeRay deletes the RayJob's cluster and
// submitter.
func (j *RayJob) Suspend() { j.Spec.Suspend = true }

// submits reports whether KubeRay runs a submitter pod for the job (its
// K8sJobMode, the default).
func (j *RayJob) submits() bool {
	return j.Spec.SubmissionMode == "" || j.Spec.SubmissionMode == rayv1.K8sJobMode
}

// templates are the pod templates of the podsets, in their order: the
// head's, each worker group's, and the submitter's when there is one.
// The submitter's is nil when KubeRay makes it.
func (j *RayJob) templates() []*corev1.PodTemplateSpec {
	cluster := j.Spec.RayClusterSpec
	if cluster == nil {
		return nil
	}
	out := raycluster.Templates(cluster)
	if j.submits() {
		out = append(out, j.Spec.SubmitterPodTemplate)
	}
	return out
}

// PodSpecs are the specs of the pod templates the RayJob holds.
func (j *RayJob) PodSpecs() []*corev1.PodSpec {
	var out []*corev1.PodSpec
	for _, t := range j.templates() {
		if t != nil {
			out = append(out, &t.Spec)
		}
	}
	return out
}

// refused says why Berth cannot bound what the RayJob runs, with the
// field; nil when it can.
func (j *RayJob) refused() *field.Error {
	spec := field.NewPath("spec")
	switch {
	case j.Spec.RayClusterSpec == nil:
		return field.Required(spec.Child("rayClusterSpec"), "Berth queues a RayJob that brings its own cluster; one that runs on an existing cluster (clusterSelector) holds no quota of its own")
	case !j.Spec.ShutdownAfterJobFinishes:
		return field.Invalid(spec.Child("shutdownAfterJobFinishes"), false,
			"KubeRay refuses to hold a suspended RayJob that keeps its cluster once it finishes, and Berth holds a queued RayJob suspended; set it to true")
	case j.Spec.SubmissionMode == rayv1.SidecarMode:
		return field.NotSupported(spec.Child("submissionMode"), j.Spec.SubmissionMode,
			[]string{string(rayv1.K8sJobMode), string(rayv1.HTTPMode), string(rayv1.InteractiveMode)})
	}
	// The submitter's name and podset are reserved whatever the mode.
	return raycluster.Refused(j.Spec.RayClusterSpec, spec.Child("rayClusterSpec"), SubmitterPodSet)
}

// defaultSubmitter is the submitter pod KubeRay makes when the RayJob
// gives no template: one container with the head's image asking for half
// a CPU and 200Mi, limited to one CPU and 1Gi (KubeRay v1.5's
// GetDefaultSubmitterContainer).
func (j *RayJob) defaultSubmitter() corev1.PodTemplateSpec {
	head := j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:  "ray-job-submitter",
			Image: head.Image,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
		}},
	}}
}

// PodSets are the head (one pod), each worker group (its pods, named by
// the group) and the submitter (one pod, in K8sJobMode).
func (j *RayJob) PodSets() ([]berthv1alpha1.PodSet, error) {
	if err := j.refused(); err != nil {
		return nil, err
	}
	out := raycluster.PodSets(j.Spec.RayClusterSpec)
	if j.submits() {
		t := j.defaultSubmitter()
		if j.Spec.SubmitterPodTemplate != nil {
			t = *j.Spec.SubmitterPodTemplate.DeepCopy()
		}
		out = append(out, berthv1alpha1.PodSet{Name: SubmitterPodSet, Count: 1, Template: t})
	}
	return out, nil
}

// PodSetPaths are where a podset is written: a worker group's replicas and
// template, the head's and the submitter's templates.
func (j *RayJob) PodSetPaths(podSet string) (count, template *field.Path) {
	cluster := field.NewPath("spec", "rayClusterSpec")
	if podSet == SubmitterPodSet {
		t := field.NewPath("spec", "submitterPodTemplate")
		return t, t
	}
	if c := j.Spec.RayClusterSpec; c != nil {
		if count, template, ok := raycluster.PodSetPaths(c, cluster, podSet); ok {
			return count, template
		}
	}
	return cluster.Child("workerGroupSpecs"), cluster.Child("workerGroupSpecs")
}

// apply writes each podset's scheduling directives into its template; the
// submitter's template is written out when KubeRay would have made it, so
// that its pod lands where its quota is.
func (j *RayJob) apply(infos []jobframework.PodSetInfo) (bool, error) {
	if j.Spec.RayClusterSpec == nil {
		return false, fmt.Errorf("the RayJob has no rayClusterSpec")
	}
	if j.submits() && j.Spec.SubmitterPodTemplate == nil {
		t := j.defaultSubmitter()
		j.Spec.SubmitterPodTemplate = &t
	}
	templates := j.templates()
	if len(infos) != len(templates) {
		return false, fmt.Errorf("the RayJob has %d podsets, got %d", len(templates), len(infos))
	}
	changed := false
	for i, t := range templates {
		changed = jobframework.ApplyToTemplate(t, infos[i]) || changed
	}
	return changed, nil
}

// RunWithPodSetsInfo unsuspends the RayJob with each podset's scheduling
// directives.
func (j *RayJob) RunWithPodSetsInfo(infos []jobframework.PodSetInfo) error {
	if _, err := j.apply(infos); err != nil {
		return err
	}
	j.Spec.Suspend = false
	return nil
}

// RestorePodSetsInfo puts back the original scheduling directives.
func (j *RayJob) RestorePodSetsInfo(infos []jobframework.PodSetInfo) bool {
	changed, err := j.apply(infos)
	return err == nil && changed
}

// Finished reports whether KubeRay has finished with the RayJob: its
// deployment Complete (the Ray job succeeded, or ended otherwise) or
// Failed (the submission, the cluster or a deadline).
func (j *RayJob) Finished() (bool, bool, string) {
	switch j.Status.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusComplete:
		if j.Status.JobStatus == rayv1.JobStatusSucceeded {
			return true, true, "RayJob succeeded"
		}
		return true, false, fmt.Sprintf("RayJob ended with Ray job status %s: %s", j.Status.JobStatus, j.Status.Message)
	case rayv1.JobDeploymentStatusFailed:
		return true, false, fmt.Sprintf("RayJob failed (%s): %s", j.Status.Reason, j.Status.Message)
	}
	return false, false, ""
}

// PodsReady reports whether the RayJob's cluster is ready: its head and
// workers all ran ready (RayClusterProvisioned), or, from a KubeRay that
// does not set the conditions, its cluster's state is ready.
func (j *RayJob) PodsReady() bool { return raycluster.Ready(&j.Status.RayClusterStatus) }
