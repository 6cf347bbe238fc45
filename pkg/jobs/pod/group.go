package pod

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// Group is a pod group: the pods of a namespace that share the label
// berth.dev/pod-group-name, admitted as one Workload once all of them
// exist. Its podsets are its roles: pods that ask for the same resources
// with the same node selector and tolerations (a LeaderWorkerSet's leader
// and its workers may differ).
//
// The pods of a GroupOwner's object, such as a StatefulSet (registered by
// pkg/jobs/statefulset), are a group whose size is the owner's replicas.
// Its Workload belongs to the owner and is admitted as soon as its first
// pod exists, because a StatefulSet creates its pods one at a time, each
// once the one before runs; the others are let through as they come, up
// to the admitted count. Such a group serves: it does not finish when its
// pods end, since the owner replaces them.
type Group struct {
	name, namespace string
	// pods are the group's pods, by name.
	pods []*corev1.Pod
	// total is the number of pods the group has when whole.
	total int32
	// owner is the object whose replicas the group's pods are, such as a
	// StatefulSet, of kind ownerKind.
	owner     *metav1.OwnerReference
	ownerKind *GroupOwner
	// invalid says why the group cannot be queued as it is.
	invalid string
	changed []*corev1.Pod
}

var _ jobframework.ComposedJob = (*Group)(nil)

// loadGroup reads the pod group name in ns from the controller's cache of
// the pods Berth holds; nil when it has no pods.
func loadGroup(ctx context.Context, c client.Reader, ns, name string) (jobframework.ComposedJob, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{berthv1alpha1.PodGroupNameLabel: name}); err != nil {
		return nil, fmt.Errorf("listing the pods of group %s: %w", name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	g := newGroup(ns, name, pods)
	if g.owner != nil {
		size, err := g.ownerKind.Size(ctx, c, ns, *g.owner)
		switch {
		case apierrors.IsNotFound(err):
			// Being deleted: its pods go with it.
			g.invalid = fmt.Sprintf("its %s %s is gone", g.owner.Kind, g.owner.Name)
		case err != nil:
			return nil, fmt.Errorf("reading the %s of group %s: %w", g.owner.Kind, name, err)
		default:
			g.total = size
		}
	}
	return g, nil
}

// A GroupOwner is a kind whose controller makes a pod group's pods and
// replaces them, such as a StatefulSet: a group whose pods it controls has
// the size the owner says, belongs to the owner, is admitted as soon as
// its first pod exists, and does not finish when its pods end.
type GroupOwner struct {
	// APIVersion and Kind are the owner's, as the pods' controller
	// reference names them.
	APIVersion, Kind string
	// Size reads how many pods the owner ref wants: a NotFound error when
	// it is gone, and 0 when another object of the kind now has its name.
	Size func(ctx context.Context, c client.Reader, ns string, ref metav1.OwnerReference) (int32, error)
	// Source is the kind's objects, whose changes change their group.
	Source jobframework.GroupSource
}

// groupOwners are the registered GroupOwners.
var groupOwners []*GroupOwner

// RegisterGroupOwner makes groups whose pods o's kind controls belong to
// it. An integration whose pods the pod integration queues calls it from
// its init, as it registers itself with jobframework.
func RegisterGroupOwner(o GroupOwner) {
	groupOwners = append(groupOwners, &o)
	integration.GroupSources = append(integration.GroupSources, o.Source)
}

// ownerOf is the registered GroupOwner that controls p, and its reference.
func ownerOf(p *corev1.Pod) (*GroupOwner, *metav1.OwnerReference) {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return nil, nil
	}
	for _, o := range groupOwners {
		if ref.APIVersion == o.APIVersion && ref.Kind == o.Kind {
			return o, ref
		}
	}
	return nil, nil
}

// newGroup is the group of pods. The group size is their
// pod-group-total-count annotation, on which all must agree, or, for the
// pods of a GroupOwner's object without it, the owner's replicas, which
// the caller reads.
func newGroup(ns, name string, pods []*corev1.Pod) *Group {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	g := &Group{name: name, namespace: ns, pods: pods}
	counts := map[string]bool{}
	queues := map[string]bool{}
	for _, p := range pods {
		if v, ok := p.Annotations[berthv1alpha1.PodGroupTotalCountAnnotation]; ok {
			counts[v] = true
		}
		queues[p.Labels[berthv1alpha1.QueueNameLabel]] = true
	}
	switch {
	case len(counts) > 1:
		g.invalid = fmt.Sprintf("its pods disagree on their annotation %s: %s", berthv1alpha1.PodGroupTotalCountAnnotation, strings.Join(slices.Sorted(maps.Keys(counts)), ", "))
	case len(queues) > 1:
		g.invalid = fmt.Sprintf("its pods disagree on their label %s: %s", berthv1alpha1.QueueNameLabel, strings.Join(slices.Sorted(maps.Keys(queues)), ", "))
	case len(counts) == 1:
		v := slices.Collect(maps.Keys(counts))[0]
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			g.invalid = fmt.Sprintf("its annotation %s is %q, not a number of pods", berthv1alpha1.PodGroupTotalCountAnnotation, v)
		} else {
			g.total = int32(n)
		}
	default:
		if kind, ref := ownerOf(pods[0]); kind != nil {
			g.ownerKind, g.owner = kind, ref
		} else {
			g.invalid = fmt.Sprintf("its pods have no annotation %s", berthv1alpha1.PodGroupTotalCountAnnotation)
		}
	}
	return g
}

// active reports whether a pod counts as the group's now: it has not
// ended and is not being deleted.
func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp.IsZero() && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func gated(p *corev1.Pod) bool { return (*Pod)(p).IsSuspended() }

// Object is the group's first pod that has not ended, or its first pod.
func (g *Group) Object() client.Object {
	for _, p := range g.pods {
		if active(p) {
			return p
		}
	}
	return g.pods[0]
}

// Members are the group's pods.
func (g *Group) Members() []client.Object {
	out := make([]client.Object, len(g.pods))
	for i, p := range g.pods {
		out[i] = p
	}
	return out
}

// serving reports whether the group is a GroupOwner's object's.
func (g *Group) serving() bool { return g.owner != nil }

// IsSuspended reports whether any pod of the group is held.
func (g *Group) IsSuspended() bool {
	return slices.ContainsFunc(g.pods, func(p *corev1.Pod) bool { return active(p) && gated(p) })
}

// Runs reports whether any pod of the group runs, or may: it is not held
// and has not ended.
func (g *Group) Runs() bool {
	return slices.ContainsFunc(g.pods, func(p *corev1.Pod) bool { return active(p) && !gated(p) })
}

// Suspend changes nothing: a pod is held from its creation.
func (g *Group) Suspend() {}

// WorkloadName is named after the group, and its owner's UID: one
// created again under the same name gets a new Workload.
func (g *Group) WorkloadName() string {
	if g.owner != nil {
		return groupWorkloadName(g.name, g.namespace+"/"+g.name+"/"+string(g.owner.UID))
	}
	return GroupWorkloadName(g.namespace, g.name)
}

// GroupWorkloadName is the name of the Workload of the pod group name in
// namespace ns, whose pods no GroupOwner controls: the same wherever the
// group's pods are created (a worker cluster's copies of a dispatched
// group, say).
func GroupWorkloadName(ns, name string) string {
	return groupWorkloadName(name, ns+"/"+name)
}

func groupWorkloadName(name, key string) string {
	return jobframework.WorkloadName(corev1.SchemeGroupVersion.WithKind("Pod"), "group-"+name, key)
}

// WorkloadLabels name the group.
func (g *Group) WorkloadLabels() map[string]string {
	return map[string]string{berthv1alpha1.PodGroupNameLabel: g.name}
}

// Owners are the group's owner, or else every pod of the group.
func (g *Group) Owners() []metav1.OwnerReference {
	if g.owner != nil {
		return []metav1.OwnerReference{{APIVersion: g.owner.APIVersion, Kind: g.owner.Kind, Name: g.owner.Name, UID: g.owner.UID}}
	}
	out := make([]metav1.OwnerReference, 0, len(g.pods))
	for _, p := range g.pods {
		out = append(out, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID})
	}
	return out
}

// Complete reports whether the group has all its pods: an owned
// group as soon as it has one.
func (g *Group) Complete() (bool, string, bool) {
	if g.invalid != "" {
		return false, g.invalid, true
	}
	n := int32(0)
	for _, p := range g.pods {
		if p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp.IsZero() {
			n++
		}
	}
	switch {
	case n > g.total:
		return false, fmt.Sprintf("it has %d pods, its size is %d", n, g.total), true
	case g.serving() && n > 0:
		return true, "", false
	case n < g.total:
		return false, fmt.Sprintf("%d of its %d pods exist; it is queued once all do", n, g.total), false
	}
	return true, "", false
}

// roleOf is the role of a pod of a group.
func roleOf(p *corev1.Pod) string {
	if r := p.Annotations[berthv1alpha1.PodGroupRoleAnnotation]; r != "" {
		return r
	}
	return role(p)
}

// role is the key of a pod's role: what it asks for and where it may run.
func role(p *corev1.Pod) string {
	b, err := json.Marshal(struct {
		Requests     resources.Requests
		NodeSelector map[string]string
		Tolerations  []corev1.Toleration
	}{workload.PodRequests(&p.Spec), p.Spec.NodeSelector, p.Spec.Tolerations})
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

// roles are the group's roles and their pods, by role. Pods that failed
// are left out while any other remains: a failed pod is replaced.
func (g *Group) roles() (keys []string, pods map[string][]*corev1.Pod) {
	pods = map[string][]*corev1.Pod{}
	for _, p := range g.pods {
		if p.Status.Phase == corev1.PodFailed || !p.DeletionTimestamp.IsZero() {
			continue
		}
		pods[roleOf(p)] = append(pods[roleOf(p)], p)
	}
	if len(pods) == 0 {
		for _, p := range g.pods {
			pods[roleOf(p)] = append(pods[roleOf(p)], p)
		}
	}
	return slices.Sorted(maps.Keys(pods)), pods
}

// podSetName is the podset of a role: "main" when the group has one.
func podSetNameOf(keys []string, key string) string {
	if len(keys) == 1 {
		return podSetName
	}
	return "role-" + key
}

// PodSets are the group's roles, each with the template of its first held
// pod, or of its first pod.
// A group of one role has podset "main" of the group's size.
func (g *Group) PodSets() ([]berthv1alpha1.PodSet, error) {
	keys, pods := g.roles()
	out := make([]berthv1alpha1.PodSet, 0, len(keys))
	for _, k := range keys {
		// A held pod is as its creator wrote it; one that runs carries
		// its admission's node selector and tolerations.
		from := pods[k][0]
		if i := slices.IndexFunc(pods[k], gated); i >= 0 {
			from = pods[k][i]
		}
		ps, err := (*Pod)(from).PodSets()
		if err != nil {
			return nil, err
		}
		ps[0].Name = podSetNameOf(keys, k)
		ps[0].Count = int32(len(pods[k]))
		if len(keys) == 1 {
			ps[0].Count = max(g.total, 1)
		}
		out = append(out, ps[0])
	}
	return out, nil
}

// RunWithPodSetsInfo lets the held pods of each role through, as many as
// its admitted count leaves room for beside those already running.
func (g *Group) RunWithPodSetsInfo(infos []jobframework.PodSetInfo) error {
	keys, pods := g.roles()
	for _, info := range infos {
		i := slices.IndexFunc(keys, func(k string) bool { return podSetNameOf(keys, k) == info.Name })
		if i < 0 {
			return fmt.Errorf("the group has no role %s", info.Name)
		}
		members := pods[keys[i]]
		running := int32(0)
		for _, p := range members {
			if active(p) && !gated(p) {
				running++
			}
		}
		for _, p := range members {
			if running >= info.Count {
				break
			}
			if !active(p) || !gated(p) {
				continue
			}
			if err := (*Pod)(p).RunWithPodSetsInfo([]jobframework.PodSetInfo{info}); err != nil {
				return fmt.Errorf("pod %s: %w", p.Name, err)
			}
			g.changed = append(g.changed, p)
			running++
		}
	}
	return nil
}

// RestorePodSetsInfo changes nothing: see Pod.
func (g *Group) RestorePodSetsInfo([]jobframework.PodSetInfo) bool { return false }

// Update writes the pods RunWithPodSetsInfo let through.
func (g *Group) Update(ctx context.Context, c client.Writer) error {
	for _, p := range g.changed {
		if err := c.Update(ctx, p); err != nil {
			return fmt.Errorf("letting pod %s of group %s run: %w", p.Name, g.name, err)
		}
	}
	g.changed = nil
	return nil
}

// DeleteRunning deletes the group's pods that run.
func (g *Group) DeleteRunning(ctx context.Context, c client.Writer) error {
	for _, p := range g.pods {
		if !active(p) || gated(p) {
			continue
		}
		if err := c.Delete(ctx, p, client.Preconditions{UID: ptr.To(p.UID)}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("stopping pod %s of group %s: %w", p.Name, g.name, err)
		}
	}
	return nil
}

// Finished reports whether all the group's pods have ended: succeeded when
// as many as its size succeeded. An owned group does not finish.
func (g *Group) Finished() (bool, bool, string) {
	if g.serving() {
		return false, false, ""
	}
	var succeeded, failed int32
	for _, p := range g.pods {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed++
		default:
			if p.DeletionTimestamp.IsZero() {
				return false, false, ""
			}
		}
	}
	switch {
	case succeeded >= g.total:
		return true, true, fmt.Sprintf("All %d pods of the group succeeded", g.total)
	case succeeded+failed >= g.total:
		return true, false, fmt.Sprintf("%d of the group's %d pods failed", failed, succeeded+failed)
	}
	return false, false, ""
}

// PodsReady reports whether as many of the group's pods as its size are
// ready or have succeeded.
func (g *Group) PodsReady() bool {
	n := int32(0)
	for _, p := range g.pods {
		if (*Pod)(p).PodsReady() {
			n++
		}
	}
	return n >= g.total
}

// groupFieldsChanged refuses a change of what puts a pod in a group, and of
// a group pod's queue: the group's Workload was made from them.
func groupFieldsChanged(oldPod, newPod *corev1.Pod) field.ErrorList {
	if oldPod.Labels[berthv1alpha1.ManagedLabel] == "" ||
		oldPod.Labels[berthv1alpha1.PodGroupNameLabel] == "" && newPod.Labels[berthv1alpha1.PodGroupNameLabel] == "" {
		return nil
	}
	var errs field.ErrorList
	labels := field.NewPath("metadata", "labels")
	for _, k := range []string{berthv1alpha1.PodGroupNameLabel, berthv1alpha1.QueueNameLabel} {
		if oldPod.Labels[k] != newPod.Labels[k] {
			errs = append(errs, field.Forbidden(labels.Key(k), "cannot change on a pod of a pod group"))
		}
	}
	k := berthv1alpha1.PodGroupTotalCountAnnotation
	if oldPod.Annotations[k] != newPod.Annotations[k] {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(k), "cannot change on a pod of a pod group"))
	}
	return errs
}
