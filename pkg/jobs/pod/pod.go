package pod

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate--v1-pod,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=pods;pods/resize,verbs=create;update,versions=v1,name=vpod.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate--v1-pod,mutating=false,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=vpodadmitted.berth.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate--v1-pod,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=pods;pods/resize,verbs=update,versions=v1,name=vpodowned.berth.dev,admissionReviewVersions=v1

// vpodadmitted.berth.dev and vpodowned.berth.dev send the creation and
// the updates of the pods that carry Berth's labels but not the queue's,
// those of admitted Jobs and JobSets, to the same validator. Such a pod is
// made only while its Workload is admitted (RunsOnWorkload); the check
// closes a race of Berth with the job's controller, so while Berth cannot
// be reached the pod is let through (failurePolicy Ignore), and a running
// job's controller can still replace its pods: Berth, not running, is not
// giving the job's quota to another either. No one but Berth may change
// what Berth wrote on such a pod.

// lwsNameLabel is the label with which the LeaderWorkerSet controller
// names the LeaderWorkerSet of its leader pods and StatefulSets.
const lwsNameLabel = "leaderworkerset.sigs.k8s.io/name"

// podSetName is the name of a pod's only podset.
const podSetName = "main"

// integration is the pod integration; RegisterGroupOwner adds to its
// GroupSources.
var integration = &jobframework.Integration{
	Name:               configv1alpha1.FrameworkPod,
	GVK:                corev1.SchemeGroupVersion.WithKind("Pod"),
	NewJob:             func() jobframework.GenericJob { return &Pod{} },
	Wrap:               wrap,
	AddToScheme:        corev1.AddToScheme,
	HoldOnlyAtCreation: true,
	// A LeaderWorkerSet's leader pod controls its group's worker
	// StatefulSet.
	Parts: []schema.GroupKind{{Group: "apps", Kind: "StatefulSet"}},
	// Both carry the LeaderWorkerSet's name.
	OwnsPart: func(leader, sts client.Object) bool {
		name := leader.GetLabels()[lwsNameLabel]
		return name != "" && sts.GetLabels()[lwsNameLabel] == name
	},
	Selects:    selects,
	GroupLabel: berthv1alpha1.PodGroupNameLabel,
	LoadGroup:  loadGroup,
	Changed:    changed,
}

// changed passes the updates of a pod that the job reconciler acts on:
// what its owner or Berth wrote (its metadata; its spec, but for the node
// it is bound to), its phase and its readiness. A pod's binding and the
// other updates of its status (its scheduling condition, its containers'
// states, its IPs: three or four for a pod that starts) change nothing it
// reads, and cost no reconcile.
var changed = jobframework.UpdatesThat(func(before, after *corev1.Pod) bool {
	if jobframework.MetadataChanged(before, after) || before.Status.Phase != after.Status.Phase || (*Pod)(before).PodsReady() != (*Pod)(after).PodsReady() ||
		before.Status.Message != after.Status.Message {
		return true
	}
	unbound := before.Spec
	unbound.NodeName = after.Spec.NodeName
	return !equality.Semantic.DeepEqual(&unbound, &after.Spec)
})

func init() {
	jobframework.Register(integration)
}

func wrap(obj client.Object) (jobframework.GenericJob, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("not a Pod: %T", obj)
	}
	return (*Pod)(p), nil
}

// selects holds a new pod in a selected namespace, unless a job Berth
// holds controls it: a Job's pods wait with their Job, not one by one.
func selects(ctx context.Context, c client.Reader, obj client.Object, opts jobframework.Options) (bool, error) {
	if held, err := opts.HeldOwner(ctx, c, obj); err != nil || held {
		return false, err
	}
	return jobframework.NamespaceSelected(ctx, c, obj.GetNamespace(), opts.PodNamespaces)
}

// Pod is a plain pod as Berth sees it.
type Pod corev1.Pod

var (
	_ jobframework.GenericJob           = (*Pod)(nil)
	_ jobframework.JobWithPodSpecs      = (*Pod)(nil)
	_ jobframework.JobWithPodSetPaths   = (*Pod)(nil)
	_ jobframework.JobWithHoldPath      = (*Pod)(nil)
	_ jobframework.JobWithCreateChecks  = (*Pod)(nil)
	_ jobframework.JobWithUpdateChecks  = (*Pod)(nil)
	_ jobframework.JobRunningOnWorkload = (*Pod)(nil)
)

// Object is the Pod.
func (p *Pod) Object() client.Object { return (*corev1.Pod)(p) }

// RunsOnWorkload names the Workload of the job whose controller made the
// pod from the template Berth ran the job with (a Job's, a JobSet's): such
// a pod carries Berth's labels, not the queue's, and is refused while that
// Workload is not admitted. Queued pods, which carry the queue label, are
// held by their gate instead.
func (p *Pod) RunsOnWorkload() string {
	if p.Labels[berthv1alpha1.QueueNameLabel] != "" || p.Labels[berthv1alpha1.ManagedLabel] == "" {
		return ""
	}
	return p.Labels[berthv1alpha1.WorkloadLabel]
}

// IsSuspended reports whether the pod carries Berth's scheduling gate.
func (p *Pod) IsSuspended() bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, isAdmissionGate)
}

func isAdmissionGate(g corev1.PodSchedulingGate) bool { return g.Name == berthv1alpha1.AdmissionGate }

func isElasticGate(g corev1.PodSchedulingGate) bool { return g.Name == berthv1alpha1.ElasticGate }

// A GroupJoiner puts a pod that another kind's controller made in that
// kind's pod group, by setting the group's label and count, from what the
// controller wrote on the pod. It leaves a pod it does not know, or one
// already in a group, as it is.
type GroupJoiner func(*corev1.Pod)

// groupJoiners run on every pod Berth holds, in the order registered.
var groupJoiners []GroupJoiner

// RegisterGroupJoiner adds j to the joiners Suspend runs. An integration
// whose pods the pod integration queues calls it from its init, as it
// registers itself with jobframework.
func RegisterGroupJoiner(j GroupJoiner) {
	groupJoiners = append(groupJoiners, j)
}

// Suspend adds Berth's scheduling gate, and the label by which the
// controller watches the pod; the registered GroupJoiners put it in its
// group. The API server takes the gate only on a pod
// being created.
func (p *Pod) Suspend() {
	if !p.IsSuspended() {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: berthv1alpha1.AdmissionGate})
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[berthv1alpha1.ManagedLabel] = "true"
	for _, join := range groupJoiners {
		join((*corev1.Pod)(p))
	}
	if p.Labels[berthv1alpha1.PodGroupNameLabel] != "" {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[berthv1alpha1.PodGroupRoleAnnotation] = role((*corev1.Pod)(p))
	}
}

// PodSpecs is the pod's own spec.
func (p *Pod) PodSpecs() []*corev1.PodSpec { return []*corev1.PodSpec{&p.Spec} }

// PodSetPaths are nil: a pod's count is always one, and its template is
// the pod itself.
func (p *Pod) PodSetPaths(string) (count, template *field.Path) { return nil, nil }

// HoldPath is the pod's scheduling gates.
func (p *Pod) HoldPath() *field.Path { return field.NewPath("spec", "schedulingGates") }

// ValidateOnCreate refuses a pod bound to a node by its creator (the API
// server runs it there at once, gate or not), and a pod of a group whose
// size Berth cannot read.
func (p *Pod) ValidateOnCreate() field.ErrorList {
	var errs field.ErrorList
	if p.Spec.NodeName != "" {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "nodeName"),
			"a pod in a Berth queue is placed by the scheduler once admitted; it cannot name its node"))
	}
	if p.Labels[berthv1alpha1.PodGroupNameLabel] == "" {
		return errs
	}
	path := field.NewPath("metadata", "annotations").Key(berthv1alpha1.PodGroupTotalCountAnnotation)
	v, ok := p.Annotations[berthv1alpha1.PodGroupTotalCountAnnotation]
	switch owner, _ := ownerOf((*corev1.Pod)(p)); {
	case ok:
		if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 1 {
			errs = append(errs, field.Invalid(path, v, "the number of pods in the group: a whole number from 1"))
		}
	case owner == nil:
		errs = append(errs, field.Required(path, "a pod of a group says how many pods the group has"))
	}
	return errs
}

// ValidateOnUpdate refuses, from anyone but Berth's controller:
//   - a change of the labels and annotations Berth wrote (see
//     ownedKeysChanged);
//   - a change of the group or the queue of a pod of a group (see
//     groupFieldsChanged);
//   - the removal of Berth's scheduling gate: only admission lets a held
//     pod through, with its flavor's node selector;
//   - more resources for a pod Berth admitted, by an in-place resize
//     (pods/resize) or otherwise: it would hold more than its workload
//     was admitted for.
func (p *Pod) ValidateOnUpdate(old jobframework.GenericJob) field.ErrorList {
	oldPod, ok := old.(*Pod)
	if !ok {
		return nil
	}
	errs := ownedKeysChanged(oldPod.Object(), p.Object())
	errs = append(errs, groupFieldsChanged((*corev1.Pod)(oldPod), (*corev1.Pod)(p))...)
	if slices.ContainsFunc(oldPod.Spec.SchedulingGates, isElasticGate) && !slices.ContainsFunc(p.Spec.SchedulingGates, isElasticGate) {
		errs = append(errs, field.Forbidden(p.HoldPath(), fmt.Sprintf(
			"only Berth removes the gate %s, once quota is admitted for the pod", berthv1alpha1.ElasticGate)))
	}
	if oldPod.IsSuspended() && !p.IsSuspended() {
		errs = append(errs, field.Forbidden(p.HoldPath(), fmt.Sprintf(
			"only Berth removes the gate %s, once the pod's workload is admitted", berthv1alpha1.AdmissionGate)))
	}
	if oldPod.Labels[berthv1alpha1.WorkloadLabel] != "" {
		before, after := workload.PodRequests(&oldPod.Spec), workload.PodRequests(&p.Spec)
		for _, name := range after.Names() {
			if after[name] > before[name] {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "containers").Key("resources"), fmt.Sprintf(
					"%s per pod cannot grow from %s to %s: the pod runs on what workload %s was admitted for",
					name, resources.Format(name, before[name]), resources.Format(name, after[name]), oldPod.Labels[berthv1alpha1.WorkloadLabel])))
			}
		}
	}
	return errs
}

// PodSets is one podset of one pod: the pod's labels, annotations and
// spec, without Berth's gate.
func (p *Pod) PodSets() ([]berthv1alpha1.PodSet, error) {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(p.Labels), Annotations: maps.Clone(p.Annotations)},
		Spec:       *p.Spec.DeepCopy(),
	}
	tmpl.Spec.SchedulingGates = slices.DeleteFunc(tmpl.Spec.SchedulingGates, isAdmissionGate)
	if len(tmpl.Spec.SchedulingGates) == 0 {
		tmpl.Spec.SchedulingGates = nil
	}
	tmpl.Spec.NodeName = ""
	return []berthv1alpha1.PodSet{{Name: podSetName, Count: 1, Template: tmpl}}, nil
}

// RunWithPodSetsInfo removes Berth's gate and adds the admission's node
// selector, tolerations, labels and annotations, all of which a gated pod
// may still take. Nothing the pod has is removed, and only Berth's labels
// and annotations are added.
func (p *Pod) RunWithPodSetsInfo(infos []jobframework.PodSetInfo) error {
	if len(infos) != 1 {
		return fmt.Errorf("a pod has one podset, got %d", len(infos))
	}
	info := infos[0]
	for k, v := range info.NodeSelector {
		if have, ok := p.Spec.NodeSelector[k]; ok && have != v {
			return fmt.Errorf("the pod's node selector has %s=%s, its flavor needs %s", k, have, v)
		}
	}
	p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, isAdmissionGate)
	if len(p.Spec.SchedulingGates) == 0 {
		p.Spec.SchedulingGates = nil
	}
	p.Spec.NodeSelector = jobframework.MergeMaps(p.Spec.NodeSelector, info.NodeSelector)
	p.Spec.Tolerations = jobframework.AppendMissingTolerations(p.Spec.Tolerations, info.Tolerations)
	p.Spec.Affinity = jobframework.NarrowAffinity(p.Spec.Affinity, info.NodeRequirements)
	p.Labels = jobframework.MergeMaps(p.Labels, admissionOnly(info.Labels, admissionLabels))
	p.Annotations = jobframework.MergeMaps(p.Annotations, admissionOnly(info.Annotations, admissionAnnotations))
	p.Labels = jobframework.MergeMaps(p.Labels, info.CheckLabels)
	p.Annotations = jobframework.MergeMaps(p.Annotations, info.CheckAnnotations)
	return nil
}

// The labels and annotations that admission adds to a pod. The podset's
// others are those of the pod its template was made from, which for a pod
// of a group is another pod: a LeaderWorkerSet's worker must not take its
// leader's labels.
var (
	admissionLabels      = []string{berthv1alpha1.WorkloadLabel, berthv1alpha1.ManagedLabel, berthv1alpha1.PodSetLabel}
	admissionAnnotations = []string{berthv1alpha1.PodSetSizeAnnotation, berthv1alpha1.PodSetTopologyAssignmentAnnotation}
)

func admissionOnly(m map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// RestorePodSetsInfo changes nothing: a pod cannot take back what its
// admission added. Berth deletes it instead.
func (p *Pod) RestorePodSetsInfo([]jobframework.PodSetInfo) bool { return false }

// Finished reports whether the pod succeeded or failed.
func (p *Pod) Finished() (bool, bool, string) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true, true, "Pod succeeded"
	case corev1.PodFailed:
		msg := "Pod failed"
		if p.Status.Message != "" {
			msg += ": " + p.Status.Message
		}
		return true, false, msg
	}
	return false, false, ""
}

// PodsReady reports whether the pod is ready, or has succeeded.
func (p *Pod) PodsReady() bool {
	if p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ownedKeysChanged refuses a change of the labels and annotations that
// Berth writes on a user's pod (berthv1alpha1.OwnedLabels and
// OwnedAnnotations), naming the key: the caller has made sure that the
// change is not Berth's own.
func ownedKeysChanged(oldObj, newObj client.Object) field.ErrorList {
	var errs field.ErrorList
	changed := func(path *field.Path, keys []string, have, want map[string]string) {
		for _, k := range keys {
			o, oldOK := have[k]
			n, newOK := want[k]
			if o != n || oldOK != newOK {
				errs = append(errs, field.Forbidden(path.Key(k), "only Berth sets or changes this key: it says what Berth admitted the object for"))
			}
		}
	}
	meta := field.NewPath("metadata")
	changed(meta.Child("labels"), berthv1alpha1.OwnedLabels, oldObj.GetLabels(), newObj.GetLabels())
	changed(meta.Child("annotations"), berthv1alpha1.OwnedAnnotations, oldObj.GetAnnotations(), newObj.GetAnnotations())
	return errs
}
