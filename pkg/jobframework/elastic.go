package jobframework

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Events of elastic jobs.
const (
	// EventQueuedSlice is the event of an elastic job that grew: the pods
	// it added wait for quota as a slice, a Workload of their own.
	EventQueuedSlice = "QueuedSlice"
	// EventScaledUp is the event of an elastic job whose slice was
	// admitted: its Workload holds the slice's quota and the added pods
	// may run.
	EventScaledUp = "ScaledUp"
	// EventScaledDown is the event of an elastic job that shrank, once the
	// pods it removed have ended: its Workload gave their quota back.
	EventScaledDown = "ScaledDown"
)

// ElasticJob is implemented by the kinds whose jobs may grow and shrink
// while they run (a Job's parallelism, a RayCluster's worker groups): a job
// of such a kind with berth.dev/elastic: "true" is elastic.
//
// Its pods are made with the scheduling gate berth.dev/elastic, from its
// templates, and Berth removes the gate from as many as the job's Workload
// is admitted for. A job that grows runs what it ran; the pods it added
// stay gated and are queued as a slice, a Workload of the added pods in
// the flavors the job runs in. Once the slice is admitted the job's
// Workload takes its quota and the slice is deleted, so that the job still
// holds quota through one Workload, which its pods name and which
// preemption weighs whole. A job that shrinks gives back the quota of the
// pods it removed once they have ended.
type ElasticJob interface {
	GenericJob
	// PodTemplates are the job's pod templates, in the order of its
	// podsets.
	PodTemplates() []*corev1.PodTemplateSpec
}

// AsElastic returns job as an ElasticJob when it is one: its kind can be,
// and it asks to be with berth.dev/elastic: "true".
func AsElastic(job GenericJob) (ElasticJob, bool) {
	ej, ok := job.(ElasticJob)
	return ej, ok && askedElastic(job.Object())
}

func askedElastic(obj client.Object) bool {
	return obj.GetAnnotations()[berthv1alpha1.ElasticAnnotation] == "true"
}

func isElasticGate(g corev1.PodSchedulingGate) bool { return g.Name == berthv1alpha1.ElasticGate }

// gateElastic adds the elastic gate and label to the templates of a new
// elastic job: every pod it makes waits until Berth lets it run.
func gateElastic(job GenericJob) {
	ej, ok := AsElastic(job)
	if !ok {
		return
	}
	for _, t := range ej.PodTemplates() {
		if !slices.ContainsFunc(t.Spec.SchedulingGates, isElasticGate) {
			t.Spec.SchedulingGates = append(t.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: berthv1alpha1.ElasticGate})
		}
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[berthv1alpha1.ElasticLabel] = "true"
	}
}

// elasticErrors refuses what would let an elastic job's pods run beyond
// their quota, naming the field: the annotation on a kind that cannot be
// elastic, or with another value than "true" or "false"; a change of it
// once the job has a Workload (oldJob is nil at creation); a template
// without the gate. names are the job's podset names.
func elasticErrors(oldJob, job GenericJob, wl *berthv1alpha1.Workload, names []string) field.ErrorList {
	path := field.NewPath("metadata", "annotations").Key(berthv1alpha1.ElasticAnnotation)
	v, set := job.Object().GetAnnotations()[berthv1alpha1.ElasticAnnotation]
	_, can := job.(ElasticJob)
	switch {
	case !set:
	case v != "true" && v != "false":
		return field.ErrorList{field.NotSupported(path, v, []string{"true", "false"})}
	case v == "true" && !can:
		return field.ErrorList{field.Invalid(path, v, "only a Job or a RayCluster can be elastic")}
	}
	if oldJob != nil && wl != nil && askedElastic(oldJob.Object()) != askedElastic(job.Object()) {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"is read when the job is created and cannot change while it has Workload %s", wl.Name))}
	}
	ej, ok := AsElastic(job)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	for i, t := range ej.PodTemplates() {
		if slices.ContainsFunc(t.Spec.SchedulingGates, isElasticGate) && t.Labels[berthv1alpha1.ElasticLabel] == "true" {
			continue
		}
		at := field.NewPath("spec")
		if i < len(names) {
			_, at = podSetPaths(job, names[i])
		}
		errs = append(errs, field.Required(at.Child("spec", "schedulingGates"), fmt.Sprintf(
			"an elastic job's pods wait for quota with the scheduling gate %s and the label %s, which Berth adds when the job is created; they must stay",
			berthv1alpha1.ElasticGate, berthv1alpha1.ElasticLabel)))
	}
	return errs
}

// requestOfElasticPod is the request of the elastic job of the kind whose
// pod obj is: the job's controller acts on its pods' gates and ends.
func (i *Integration) requestOfElasticPod(_ context.Context, obj client.Object) []reconcile.Request {
	if obj.GetLabels()[berthv1alpha1.ElasticLabel] != "true" {
		return nil
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != i.GVK.Kind || ref.APIVersion != i.GVK.GroupVersion().String() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}}}
}

// elasticPodChanged passes the changes of an elastic job's pod that its
// job acts on: its creation and deletion, its gate, its end, its readiness
// and the start of its deletion. Binding and the other status updates of
// a running pod change nothing the job reconciler reads.
var elasticPodChanged = UpdatesThat(func(before, after *corev1.Pod) bool {
	ended := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}
	return slices.ContainsFunc(before.Spec.SchedulingGates, isElasticGate) != slices.ContainsFunc(after.Spec.SchedulingGates, isElasticGate) ||
		ended(before) != ended(after) || podReady(before) != podReady(after) ||
		before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero()
})

// PodWorkloadKey indexes the pods the controller caches by the Workload
// their berth.dev/workload label names (see controller.SetupIndexes).
const PodWorkloadKey = "metadata.labels.berth.dev/workload"

// podTally is what the pods of one podset of an elastic job hold.
type podTally struct {
	// running are the pods that may hold a node: not ended, not gated
	// (terminating ones included).
	running int32
	// ready are the running pods that are ready, and the pods that
	// succeeded.
	ready int32
	// gated are the pods that wait for quota, oldest first.
	gated []*corev1.Pod
}

// tallyPods counts the pods of wl by podset.
func tallyPods(pods []corev1.Pod) map[string]*podTally {
	out := map[string]*podTally{}
	for i := range pods {
		p := &pods[i]
		name := p.Labels[berthv1alpha1.PodSetLabel]
		t := out[name]
		if t == nil {
			t = &podTally{}
			out[name] = t
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			t.ready++
		case p.Status.Phase == corev1.PodFailed:
		case slices.ContainsFunc(p.Spec.SchedulingGates, isElasticGate):
			if p.DeletionTimestamp.IsZero() {
				t.gated = append(t.gated, p)
			}
		default:
			t.running++
			if podReady(p) {
				t.ready++
			}
		}
	}
	for _, t := range out {
		slices.SortFunc(t.gated, func(a, b *corev1.Pod) int {
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// syncElastic keeps a running elastic job within its Workload's admission,
// one write at a time: the gated pods that the admission covers are let
// run; a job that grew has its added pods queued as a slice, whose quota
// its Workload takes once admitted; a job that shrank gives back the quota
// of the pods it removed once they ended; and its Workload reports whether
// the pods it admitted are ready.
func (r *JobReconciler) syncElastic(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet) (ctrl.Result, error) {
	if diff := requestsBeyond(wl, podSets); diff != "" {
		return ctrl.Result{}, r.evictChanged(ctx, wl, "The job runs other pods than its Workload was admitted for: "+diff)
	}
	pods := &corev1.PodList{}
	// By the index of the pods' Workload: a label selector would be matched
	// against every pod of the namespace on each pod's change.
	if err := r.client.List(ctx, pods, client.InNamespace(wl.Namespace), client.MatchingFields{PodWorkloadKey: wl.Name}); err != nil {
		return ctrl.Result{}, err
	}
	admitted := workload.AdmittedCounts(wl)
	tally := tallyPods(pods.Items)
	if wrote, err := r.ungate(ctx, wl, admitted, tally); err != nil || wrote {
		return ctrl.Result{}, err
	}
	if wrote, err := r.syncSlice(ctx, job, wl, podSets, admitted); err != nil || wrote {
		return ctrl.Result{}, err
	}
	if wrote, err := r.shrink(ctx, job, wl, podSets, admitted, tally); err != nil || wrote {
		return ctrl.Result{}, err
	}
	ready := true
	for name, n := range admitted {
		if t := tally[name]; t == nil || t.ready < n {
			ready = false
		}
	}
	return ctrl.Result{}, r.apply(ctx, wl, workload.SetPodsReady(ready))
}

// ungate lets run the gated pods of each podset that its admission covers
// beside the pods that run, oldest first. A podset placed on a Topology
// has its pods carry the admission's topology assignment as it is now,
// grown by the slices admitted since the job's template was made. It
// reports whether it wrote.
func (r *JobReconciler) ungate(ctx context.Context, wl *berthv1alpha1.Workload, admitted map[string]int32, tally map[string]*podTally) (bool, error) {
	placed := map[string]string{}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		if psa.TopologyAssignment != nil {
			encoded, err := json.Marshal(psa.TopologyAssignment)
			if err != nil {
				return false, err
			}
			placed[psa.Name] = string(encoded)
		}
	}
	wrote := false
	for name, t := range tally {
		free := int(admitted[name] - t.running)
		for _, p := range t.gated[:max(0, min(free, len(t.gated)))] {
			patched := p.DeepCopy()
			patched.Spec.SchedulingGates = slices.DeleteFunc(patched.Spec.SchedulingGates, isElasticGate)
			if ta, ok := placed[name]; ok {
				patched.Annotations = MergeMaps(patched.Annotations, map[string]string{berthv1alpha1.PodSetTopologyAssignmentAnnotation: ta})
			}
			// The optimistic lock keeps a stale cache from letting a pod
			// run twice over: the pods are taken in a fixed order, and a
			// pod let run a moment ago conflicts.
			if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); err != nil {
				return wrote, client.IgnoreNotFound(err)
			}
			wrote = true
		}
	}
	return wrote, nil
}

// sliceName is the name of the Workload of the slice that grows wl.
func sliceName(wl *berthv1alpha1.Workload) string {
	return FitName(wl.Name+"-slice", maxLabelValue)
}

// newSlice is the slice that grows wl, admitted for admitted, to the pod
// sets podSets of its job; nil when the job asks for no more pods. The
// slice asks for the added pods of each podset, in the flavors the job
// runs in, with the job's queue and priority.
func newSlice(wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet, admitted map[string]int32) *berthv1alpha1.Workload {
	var sets []berthv1alpha1.PodSet
	flavors := map[string]map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{}
	for i := range wl.Spec.PodSets {
		ps := &wl.Spec.PodSets[i]
		j := slices.IndexFunc(podSets, func(p berthv1alpha1.PodSet) bool { return p.Name == ps.Name })
		if j < 0 || podSets[j].Count <= admitted[ps.Name] {
			continue
		}
		slice := berthv1alpha1.PodSet{Name: ps.Name, Count: podSets[j].Count - admitted[ps.Name], Template: *ps.Template.DeepCopy()}
		for _, psa := range wl.Status.Admission.PodSetAssignments {
			if psa.Name != ps.Name {
				continue
			}
			flavors[ps.Name] = psa.Flavors
			if psa.TopologyAssignment != nil {
				// The added pods come from the job's template, which
				// admission confined to the job's domains: the slice is
				// placed where they may go.
				live := &podSets[j].Template.Spec
				slice.Template.Spec.NodeSelector = maps.Clone(live.NodeSelector)
				slice.Template.Spec.Affinity = live.Affinity.DeepCopy()
			}
		}
		sets = append(sets, slice)
	}
	if len(sets) == 0 {
		return nil
	}
	pinned, _ := json.Marshal(flavors)
	base, _ := json.Marshal(admitted)
	return &berthv1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:            sliceName(wl),
			Namespace:       wl.Namespace,
			OwnerReferences: slices.Clone(wl.OwnerReferences),
			Labels: map[string]string{
				berthv1alpha1.QueueNameLabel: string(wl.Spec.QueueName),
				berthv1alpha1.JobUIDLabel:    wl.Labels[berthv1alpha1.JobUIDLabel],
				berthv1alpha1.SliceOfLabel:   wl.Name,
			},
			Annotations: map[string]string{
				berthv1alpha1.SliceFlavorsAnnotation: string(pinned),
				berthv1alpha1.SliceBaseAnnotation:    string(base),
			},
		},
		Spec: berthv1alpha1.WorkloadSpec{
			PodSets:                     sets,
			QueueName:                   wl.Spec.QueueName,
			PriorityClassName:           wl.Spec.PriorityClassName,
			Priority:                    wl.Spec.Priority,
			PriorityClassRef:            wl.Spec.PriorityClassRef,
			Active:                      ptr.To(true),
			MaximumExecutionTimeSeconds: wl.Spec.MaximumExecutionTimeSeconds,
		},
	}
}

// sameSlice reports whether the slice have asks for what want does: the
// same pods of the same podsets, in the same queue, at the same priority,
// grown from the same admission.
func sameSlice(have, want *berthv1alpha1.Workload) bool {
	if len(have.Spec.PodSets) != len(want.Spec.PodSets) || have.Spec.QueueName != want.Spec.QueueName ||
		have.Spec.PriorityClassName != want.Spec.PriorityClassName || !ptr.Equal(have.Spec.Priority, want.Spec.Priority) ||
		have.Annotations[berthv1alpha1.SliceBaseAnnotation] != want.Annotations[berthv1alpha1.SliceBaseAnnotation] {
		return false
	}
	for i := range have.Spec.PodSets {
		if have.Spec.PodSets[i].Name != want.Spec.PodSets[i].Name || have.Spec.PodSets[i].Count != want.Spec.PodSets[i].Count {
			return false
		}
	}
	return true
}

// sliceBase is the admitted counts the slice grows from.
func sliceBase(slice *berthv1alpha1.Workload) map[string]int32 {
	base := map[string]int32{}
	if err := json.Unmarshal([]byte(slice.Annotations[berthv1alpha1.SliceBaseAnnotation]), &base); err != nil {
		return nil
	}
	return base
}

// syncSlice queues the pods an elastic job added as a slice, and grows
// its Workload by the slice once admitted, in two writes that can be cut
// between (the slice's base says whether the Workload has grown by it):
// the Workload takes the slice's quota, then the slice is deleted. A slice
// that no longer asks for what the job adds is deleted, to be made again.
// It reports whether it wrote.
func (r *JobReconciler) syncSlice(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet, admitted map[string]int32) (bool, error) {
	want := newSlice(wl, podSets, admitted)
	slice := &berthv1alpha1.Workload{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: sliceName(wl)}, slice); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		slice = nil
	}
	switch {
	case slice == nil && want == nil:
		return false, nil
	case slice == nil:
		if err := r.writer.Create(ctx, want); err != nil {
			return false, client.IgnoreAlreadyExists(err)
		}
		r.eventf(job, want, corev1.EventTypeNormal, EventQueuedSlice, "Grow", "The job asks for %s more than Workload %s was admitted for: they wait at their gate, queued as slice %s in LocalQueue %s",
			describePods(want.Spec.PodSets), wl.Name, want.Name, want.Spec.QueueName)
		return true, nil
	case !slice.DeletionTimestamp.IsZero():
		return true, nil
	case workload.IsAdmitted(slice) && !workload.IsEvicted(slice) && slice.Status.Admission != nil:
		base := sliceBase(slice)
		if maps.Equal(admitted, base) && slice.Status.Admission.ClusterQueue == wl.Status.Admission.ClusterQueue &&
			workload.SameFlavors(wl.Status.Admission, slice.Status.Admission) {
			if _, err := workloadwriter.Apply(ctx, r.writer, wl, workload.Grow(slice.Status.Admission)); err != nil {
				return false, err
			}
			r.eventf(job, wl, corev1.EventTypeNormal, EventScaledUp, "Grow", "Admitted slice %s (%s) in ClusterQueue %s: Workload %s now holds their quota, and they may run",
				slice.Name, describePods(slice.Spec.PodSets), slice.Status.Admission.ClusterQueue, wl.Name)
			return true, nil
		}
		// Grown by it already, or admitted for what the Workload no
		// longer is or elsewhere: its quota is the Workload's, or no
		// one's.
		return true, r.deleteWorkload(ctx, slice)
	case want != nil && sameSlice(slice, want) && !workload.IsEvicted(slice) && !workload.IsFinished(slice):
		return false, nil
	}
	return true, r.deleteWorkload(ctx, slice)
}

// dropSlice deletes the slice of an elastic job that does not run
// admitted: what it would add to has stopped. It reports whether there was
// one.
func (r *JobReconciler) dropSlice(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload) (bool, error) {
	if _, ok := AsElastic(job); !ok {
		return false, nil
	}
	slice := &berthv1alpha1.Workload{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: sliceName(wl)}, slice); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !slice.DeletionTimestamp.IsZero() {
		return false, nil
	}
	return true, r.deleteWorkload(ctx, slice)
}

// shrink gives back the quota of the pods an elastic job removed, once no
// more of its pods run than it asks for. It reports whether it wrote.
func (r *JobReconciler) shrink(ctx context.Context, job GenericJob, wl *berthv1alpha1.Workload, podSets []berthv1alpha1.PodSet, admitted map[string]int32, tally map[string]*podTally) (bool, error) {
	counts := map[string]int32{}
	var gone []berthv1alpha1.PodSet
	for _, ps := range podSets {
		running := int32(0)
		if t := tally[ps.Name]; t != nil {
			running = t.running
		}
		if have, ok := admitted[ps.Name]; ok && ps.Count < have && running <= ps.Count {
			counts[ps.Name] = ps.Count
			gone = append(gone, berthv1alpha1.PodSet{Name: ps.Name, Count: have - ps.Count})
		}
	}
	if len(counts) == 0 {
		return false, nil
	}
	written, err := workloadwriter.Apply(ctx, r.writer, wl, workload.Shrink(counts))
	if err != nil || written == wl {
		return false, err
	}
	r.eventf(job, wl, corev1.EventTypeNormal, EventScaledDown, "Shrink", "%s were removed and have ended: Workload %s gave their quota back to ClusterQueue %s",
		describePods(gone), wl.Name, wl.Status.Admission.ClusterQueue)
	return true, nil
}

// describePods says how many pods of which podsets, as "2 pods of podset
// workers".
func describePods(sets []berthv1alpha1.PodSet) string {
	parts := make([]string, 0, len(sets))
	for _, ps := range sets {
		noun := "pods"
		if ps.Count == 1 {
			noun = "pod"
		}
		parts = append(parts, fmt.Sprintf("%d %s of podset %s", ps.Count, noun, ps.Name))
	}
	return strings.Join(parts, " and ")
}
