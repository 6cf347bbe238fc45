package raycluster

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// +kubebuilder:webhook:path=/mutate-ray-io-v1-raycluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayclusters,verbs=create,versions=v1,name=mraycluster.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-ray-io-v1-raycluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=ray.io,resources=rayclusters,verbs=create;update,versions=v1,name=vraycluster.berth.dev,admissionReviewVersions=v1

// clusterLabel is KubeRay's label of a cluster's pods, its name.
const clusterLabel = "ray.io/cluster"

func init() {
	jobframework.Register(&jobframework.Integration{
		Name:        configv1alpha1.FrameworkRayCluster,
		GVK:         rayv1.GroupVersion.WithKind("RayCluster"),
		NewJob:      func() jobframework.GenericJob { return &RayCluster{} },
		Wrap:        wrap,
		AddToScheme: rayv1.AddToScheme,
		Parts:       []schema.GroupKind{{Kind: "Pod"}},
		// KubeRay labels the pods it makes with their cluster's name, and
		// makes none while the cluster is suspended.
		OwnsPart: func(owner, pod client.Object) bool {
			rc, ok := owner.(*rayv1.RayCluster)
			return ok && !ptr.Deref(rc.Spec.Suspend, false) && pod.GetLabels()[clusterLabel] == rc.Name
		},
		Selects: selects,
	})
}

func wrap(obj client.Object) (jobframework.GenericJob, error) {
	rc, ok := obj.(*rayv1.RayCluster)
	if !ok {
		return nil, fmt.Errorf("not a RayCluster: %T", obj)
	}
	return (*RayCluster)(rc), nil
}

// selects holds a new RayCluster unless it is the cluster of a RayJob
// that Berth holds, which runs on that RayJob's quota.
func selects(ctx context.Context, c client.Reader, obj client.Object, opts jobframework.Options) (bool, error) {
	rc, ok := obj.(*rayv1.RayCluster)
	if !ok {
		return false, fmt.Errorf("not a RayCluster: %T", obj)
	}
	owned, err := ofHeldRayJob(ctx, c, rc, opts)
	return !owned, err
}

// ofHeldRayJob reports whether rc is the cluster KubeRay made for a RayJob
// that Berth holds: its controller is that RayJob, with the UID the
// reference names, and the RayJob's status names rc as its cluster, which
// KubeRay writes before it creates the cluster. Owner references are their
// creator's to write: a cluster made beside the RayJob's, naming it as its
// owner, is not its cluster, and waits in its own queue.
func ofHeldRayJob(ctx context.Context, c client.Reader, rc *rayv1.RayCluster, opts jobframework.Options) (bool, error) {
	ref := metav1.GetControllerOf(rc)
	if ref == nil || ref.Kind != "RayJob" || ref.APIVersion != rayv1.GroupVersion.String() ||
		!opts.Enables(configv1alpha1.FrameworkRayJob) {
		return false, nil
	}
	key := client.ObjectKey{Namespace: rc.Namespace, Name: ref.Name}
	rj := &rayv1.RayJob{}
	err := c.Get(ctx, key, rj)
	if err == nil && rj.UID == ref.UID && rj.Status.RayClusterName != rc.Name {
		// KubeRay wrote the status that names the cluster a moment before
		// the cluster: a cache may not have it yet.
		err = jobframework.GetLive(ctx, c, key, rj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the RayJob that owns RayCluster %s: %w", rc.Name, err)
	case rj.UID != ref.UID || rj.Status.RayClusterName != rc.Name:
		return false, nil
	}
	return opts.Holds(ctx, c, rj)
}

// RayCluster is a RayCluster as Berth sees it.
type RayCluster rayv1.RayCluster

var (
	_ jobframework.GenericJob          = (*RayCluster)(nil)
	_ jobframework.JobWithPodSpecs     = (*RayCluster)(nil)
	_ jobframework.JobWithPodSetPaths  = (*RayCluster)(nil)
	_ jobframework.JobWithUpdateChecks = (*RayCluster)(nil)
	_ jobframework.ElasticJob          = (*RayCluster)(nil)
)

// Object is the RayCluster.
func (c *RayCluster) Object() client.Object { return (*rayv1.RayCluster)(c) }

// IsSuspended reports whether spec.suspend is true.
func (c *RayCluster) IsSuspended() bool { return ptr.Deref(c.Spec.Suspend, false) }

// Suspend sets spec.suspend: KubeRay deletes the cluster's pods.
func (c *RayCluster) Suspend() { c.Spec.Suspend = ptr.To(true) }

// PodSpecs are the specs of the head's and the worker groups' templates.
func (c *RayCluster) PodSpecs() []*corev1.PodSpec {
	var out []*corev1.PodSpec
	for _, t := range Templates(&c.Spec) {
		out = append(out, &t.Spec)
	}
	return out
}

// PodTemplates are the head's and the worker groups' templates: a
// RayCluster with berth.dev/elastic: "true" may scale its worker groups
// once admitted.
func (c *RayCluster) PodTemplates() []*corev1.PodTemplateSpec { return Templates(&c.Spec) }

// PodSets are the head (one pod) and each worker group (its pods, named by
// the group).
func (c *RayCluster) PodSets() ([]berthv1alpha1.PodSet, error) {
	if err := Refused(&c.Spec, field.NewPath("spec")); err != nil {
		return nil, err
	}
	return PodSets(&c.Spec), nil
}

// PodSetPaths are where a podset is written: a worker group's replicas and
// template, the head's template.
func (c *RayCluster) PodSetPaths(podSet string) (count, template *field.Path) {
	spec := field.NewPath("spec")
	if count, template, ok := PodSetPaths(&c.Spec, spec, podSet); ok {
		return count, template
	}
	return spec.Child("workerGroupSpecs"), spec.Child("workerGroupSpecs")
}

// apply writes each podset's scheduling directives into its template.
func (c *RayCluster) apply(infos []jobframework.PodSetInfo) (bool, error) {
	templates := Templates(&c.Spec)
	if len(infos) != len(templates) {
		return false, fmt.Errorf("the RayCluster has %d podsets, got %d", len(templates), len(infos))
	}
	changed := false
	for i, t := range templates {
		changed = jobframework.ApplyToTemplate(t, infos[i]) || changed
	}
	return changed, nil
}

// RunWithPodSetsInfo unsuspends the RayCluster with each podset's
// scheduling directives.
func (c *RayCluster) RunWithPodSetsInfo(infos []jobframework.PodSetInfo) error {
	if _, err := c.apply(infos); err != nil {
		return err
	}
	c.Spec.Suspend = ptr.To(false)
	return nil
}

// RestorePodSetsInfo puts back the original scheduling directives.
func (c *RayCluster) RestorePodSetsInfo(infos []jobframework.PodSetInfo) bool {
	changed, err := c.apply(infos)
	return err == nil && changed
}

// Finished is never true: a RayCluster serves until it is deleted, and its
// quota is released then.
func (c *RayCluster) Finished() (bool, bool, string) { return false, false, "" }

// PodsReady reports whether the cluster's head and workers all ran ready.
func (c *RayCluster) PodsReady() bool { return Ready(&c.Status) }

// ValidateOnUpdate refuses taking the queue label off the running cluster
// of a RayJob: the cluster runs on its RayJob's quota, and the label is
// what sends its changes to Berth's webhook, which refuses a change of its
// podsets as of any running job's.
func (c *RayCluster) ValidateOnUpdate(old jobframework.GenericJob) field.ErrorList {
	ref := metav1.GetControllerOf(c)
	if ref == nil || ref.Kind != "RayJob" || c.IsSuspended() {
		return nil
	}
	was, now := jobframework.QueueName(old.Object()), jobframework.QueueName(c)
	if was == "" || was == now {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(berthv1alpha1.QueueNameLabel), fmt.Sprintf(
		"cannot change on the running cluster of RayJob %s, which holds its quota; change the RayJob's label instead", ref.Name))}
}
