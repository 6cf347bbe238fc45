package raycluster

import (
	"math"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// HeadPodSet is the name of the Ray head's podset.
const HeadPodSet = "head"

// maxPodSets is how many podsets a Workload holds.
const maxPodSets = 8

// Refused says why Berth cannot bound the pods of a cluster spec, at path,
// with the field; nil when it can. reserved are the podset names besides
// the head's that the worker groups must not take (a RayJob's submitter's),
// each of which takes a podset too.
func Refused(spec *rayv1.RayClusterSpec, path *field.Path, reserved ...string) *field.Error {
	maxGroups := maxPodSets - 1 - len(reserved)
	switch {
	case ptr.Deref(spec.EnableInTreeAutoscaling, false):
		return field.Invalid(path.Child("enableInTreeAutoscaling"), true, "Ray's autoscaler would grow the worker groups beyond what the Workload admits")
	case len(spec.WorkerGroupSpecs) > maxGroups:
		return field.TooMany(path.Child("workerGroupSpecs"), len(spec.WorkerGroupSpecs), maxGroups)
	case len(spec.HeadGroupSpec.Template.Spec.Containers) == 0:
		return field.Required(path.Child("headGroupSpec", "template", "spec", "containers"), "")
	}
	return badGroupName(spec.WorkerGroupSpecs, path.Child("workerGroupSpecs"), append([]string{HeadPodSet}, reserved...))
}

// badGroupName refuses a worker group name that cannot name a podset (and
// the value of its pods' berth.dev/podset label): not a DNS label, one of
// the reserved names, or another group's.
func badGroupName(groups []rayv1.WorkerGroupSpec, path *field.Path, reserved []string) *field.Error {
	seen := map[string]bool{}
	for _, r := range reserved {
		seen[r] = true
	}
	for i := range groups {
		name, at := groups[i].GroupName, path.Index(i).Child("groupName")
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			return field.Invalid(at, name, "Berth names the group's podset after it: "+strings.Join(msgs, "; "))
		}
		if seen[name] {
			return field.Duplicate(at, name)
		}
		seen[name] = true
	}
	return nil
}

// workers is how many pods KubeRay runs for a worker group: its replicas
// within minReplicas and maxReplicas, as KubeRay bounds them, times its
// hosts (at least one), saturated at the largest podset count. A group
// suspended on its own still counts: its suspension is the user's to lift.
func workers(g *rayv1.WorkerGroupSpec) int32 {
	lo, hi := int64(ptr.Deref(g.MinReplicas, 0)), int64(ptr.Deref(g.MaxReplicas, math.MaxInt32))
	n := int64(ptr.Deref(g.Replicas, int32(lo)))
	switch {
	case lo > hi:
		n = hi
	case n < lo:
		n = lo
	case n > hi:
		n = hi
	}
	n *= int64(max(g.NumOfHosts, 1))
	return int32(min(max(n, 0), math.MaxInt32))
}

// PodSets are the podsets of a cluster spec that Refused accepts: the head
// (one pod) and each worker group (its pods, named by the group).
func PodSets(spec *rayv1.RayClusterSpec) []berthv1alpha1.PodSet {
	out := []berthv1alpha1.PodSet{{Name: HeadPodSet, Count: 1, Template: *spec.HeadGroupSpec.Template.DeepCopy()}}
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		out = append(out, berthv1alpha1.PodSet{Name: g.GroupName, Count: workers(g), Template: *g.Template.DeepCopy()})
	}
	return out
}

// Templates are the pod templates of a cluster spec, in the order of its
// podsets.
func Templates(spec *rayv1.RayClusterSpec) []*corev1.PodTemplateSpec {
	out := []*corev1.PodTemplateSpec{&spec.HeadGroupSpec.Template}
	for i := range spec.WorkerGroupSpecs {
		out = append(out, &spec.WorkerGroupSpecs[i].Template)
	}
	return out
}

// PodSetPaths are where a podset of the cluster spec at path is written: a
// worker group's replicas and template, the head's template; ok is false
// for a name that is neither.
func PodSetPaths(spec *rayv1.RayClusterSpec, path *field.Path, podSet string) (count, template *field.Path, ok bool) {
	if podSet == HeadPodSet {
		t := path.Child("headGroupSpec", "template")
		return t, t, true
	}
	for i := range spec.WorkerGroupSpecs {
		if spec.WorkerGroupSpecs[i].GroupName == podSet {
			g := path.Child("workerGroupSpecs").Index(i)
			return g.Child("replicas"), g.Child("template"), true
		}
	}
	return nil, nil, false
}

// Ready reports whether a cluster's pods all ran ready
// (RayClusterProvisioned), or, from a KubeRay that does not set the
// conditions, whether its state is ready.
func Ready(st *rayv1.RayClusterStatus) bool {
	if c := meta.FindStatusCondition(st.Conditions, string(rayv1.RayClusterProvisioned)); c != nil {
		return c.Status == metav1.ConditionTrue
	}
	return st.State == rayv1.Ready //nolint:staticcheck // the conditions replace State behind a KubeRay feature gate
}
