package jobframework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// JobWithPodTemplates is implemented by jobs whose pod templates can be
// found by podset name, so that a part of another job can be given that
// job's admission (see Integration.PartsCarryAdmission).
type JobWithPodTemplates interface {
	// PodTemplate is the template of the podset named podSet; nil when the
	// job has none of that name.
	PodTemplate(podSet string) *corev1.PodTemplateSpec
}

// JobWithReferences is implemented by jobs whose pod sets are read partly
// from other objects: a TrainJob's from the training runtime it names.
// Resolve reads them before PodSets is called; an object that is missing
// is a field error naming the reference.
type JobWithReferences interface {
	Resolve(ctx context.Context, c client.Reader) error
}

// carrier is the job that obj is a part of, when that job's kind renders
// its parts from it (PartsCarryAdmission) and Berth holds it; owner is nil
// when there is none. wl is the job's Workload, nil before it has one.
type carrier struct {
	owner       client.Object
	integration *Integration
	wl          *berthv1alpha1.Workload
}

// carrierOf finds the carrier of obj, if it has one.
func (o Options) carrierOf(ctx context.Context, c client.Reader, obj client.Object) (carrier, error) {
	owner, i, err := controllerJob(ctx, c, obj, o)
	if err != nil || owner == nil || !i.PartsCarryAdmission {
		return carrier{}, err
	}
	if held, err := o.Holds(ctx, c, owner); err != nil || !held {
		return carrier{}, err
	}
	wl := &berthv1alpha1.Workload{}
	key := types.NamespacedName{Namespace: owner.GetNamespace(), Name: WorkloadName(i.GVK, owner.GetName(), string(owner.GetUID()))}
	if err := c.Get(ctx, key, wl); err != nil {
		if !apierrors.IsNotFound(err) {
			return carrier{}, fmt.Errorf("reading the Workload of the %s that controls %s: %w", i.GVK.Kind, obj.GetName(), err)
		}
		wl = nil
	}
	return carrier{owner: owner, integration: i, wl: wl}, nil
}

// runsAdmitted reports whether the carrier's Workload is admitted, and
// neither evicted nor finished: its parts may start.
func (k carrier) runsAdmitted() bool {
	return k.wl != nil && k.wl.Status.Admission != nil && workload.IsAdmitted(k.wl) && !workload.IsEvicted(k.wl) && !workload.IsFinished(k.wl)
}

// carryAdmission writes the carrier's admission into part, a new or
// changed object that runs: each podset's template gets the admission's
// labels and annotations, the flavors' node labels and tolerations, added
// to what its own controller wrote there. A part that does not run, or
// whose job is not admitted, is left as it is: the validator refuses it if
// it would run.
func (k carrier) carryAdmission(ctx context.Context, c client.Reader, part GenericJob) error {
	withTemplates, ok := part.(JobWithPodTemplates)
	if part.IsSuspended() || !k.runsAdmitted() || !ok {
		return nil
	}
	infos, err := admittedInfos(ctx, c, k.wl)
	if err != nil {
		return err
	}
	for _, info := range infos {
		t := withTemplates.PodTemplate(info.Name)
		if t == nil {
			continue
		}
		t.Labels = MergeMaps(t.Labels, info.Labels)
		t.Annotations = MergeMaps(t.Annotations, info.Annotations)
		t.Spec.NodeSelector = MergeMaps(t.Spec.NodeSelector, info.NodeSelector)
		t.Spec.Tolerations = AppendMissingTolerations(t.Spec.Tolerations, info.Tolerations)
		t.Spec.Affinity = NarrowAffinity(t.Spec.Affinity, info.NodeRequirements)
	}
	return nil
}

// refusal says why part may not run as it is, with the field that holds
// it; nil when it is held, or runs within its carrier's admission: the
// same podsets, no more pods in each than admitted, the same requests per
// pod. Its own controller renders it from the job, but from objects the
// user may change in between (a TrainJob's runtime), and a user may edit
// the part itself.
//
// A part that ran before the change (old) and runs no more than it did is
// let through whatever its job's state: its controller may still write it
// while its job finishes, or is stopped after an eviction.
func (k carrier) refusal(ctx context.Context, c client.Reader, old, part GenericJob) (field.ErrorList, error) {
	if part.IsSuspended() {
		return nil, nil
	}
	podSets, errs, err := podSetsOf(ctx, c, part)
	if err != nil || len(errs) > 0 {
		return errs, err
	}
	if old != nil && !old.IsSuspended() {
		oldPodSets, oldErrs, err := podSetsOf(ctx, c, old)
		if err != nil {
			return nil, err
		}
		if len(oldErrs) == 0 && noMoreThan(oldPodSets, podSets) {
			return nil, nil
		}
	}
	why := "it is not admitted"
	if k.runsAdmitted() {
		why = outsideAdmission(k.wl, podSets)
	}
	if why == "" {
		return nil, nil
	}
	path := field.NewPath("spec", "suspend")
	if h, ok := part.(JobWithHoldPath); ok {
		path = h.HoldPath()
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"%s %s runs only within the admission of its %s %s, whose Workload is %s: %s",
		kindOf(part.Object()).Kind, part.Object().GetName(), k.integration.GVK.Kind, k.owner.GetName(), workloadName(k.wl), why))}, nil
}

// workloadName is wl's name, or says it has none yet.
func workloadName(wl *berthv1alpha1.Workload) string {
	if wl == nil {
		return "not created yet"
	}
	return wl.Name
}

// outsideAdmission says how podSets go beyond wl's admission: a podset the
// Workload does not have, more pods than admitted, or other requests per
// pod than the Workload's.
func outsideAdmission(wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet) string {
	admitted := map[string]int32{}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		admitted[psa.Name] = ptr.Deref(psa.Count, 0)
	}
	var diffs []string
	for i := range podSets {
		got := &podSets[i]
		j := slices.IndexFunc(wl.Spec.PodSets, func(ps berthv1alpha1.PodSet) bool { return ps.Name == got.Name })
		if j < 0 {
			diffs = append(diffs, fmt.Sprintf("podset %s was not admitted", got.Name))
			continue
		}
		want := &wl.Spec.PodSets[j]
		n, ok := admitted[want.Name]
		if !ok {
			n = want.Count
		}
		if got.Count > n {
			diffs = append(diffs, fmt.Sprintf("podset %s: %d pods, admitted %d", got.Name, got.Count, n))
		}
		if !maps.Equal(workload.PodRequests(&want.Template.Spec), workload.PodRequests(&got.Template.Spec)) {
			diffs = append(diffs, fmt.Sprintf("podset %s: other requests per pod than admitted", got.Name))
		}
	}
	return strings.Join(diffs, "; ")
}

// noMoreThan reports whether every podset of podSets is one of have, of
// no more pods and the same requests per pod.
func noMoreThan(have, podSets []berthv1alpha1.PodSet) bool {
	for i := range podSets {
		got := &podSets[i]
		j := slices.IndexFunc(have, func(ps berthv1alpha1.PodSet) bool { return ps.Name == got.Name })
		if j < 0 || got.Count > have[j].Count ||
			!maps.Equal(workload.PodRequests(&have[j].Template.Spec), workload.PodRequests(&got.Template.Spec)) {
			return false
		}
	}
	return true
}

// partDecision finds the carrier of obj, an object of i's kind, and wraps
// obj: isPart reports whether it has one, so that it is not judged as a
// job of its own.
func (o Options) partDecision(ctx context.Context, c client.Reader, i *Integration, obj client.Object) (carrier, GenericJob, bool, error) {
	k, err := o.carrierOf(ctx, c, obj)
	if err != nil || k.owner == nil {
		return carrier{}, nil, false, err
	}
	part, err := i.Wrap(obj)
	if err != nil {
		return carrier{}, nil, false, err
	}
	return k, part, true, nil
}
