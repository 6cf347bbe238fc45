package workload

import (
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// PodSetInfo is what one podset asks for.
type PodSetInfo struct {
	// Name is the podset's name.
	Name string
	// Count is the number of pods asked for.
	Count int32
	// MinCount is the fewest pods partial admission may give; equal to
	// Count when the podset does not allow partial admission.
	MinCount int32
	// PerPod is the request of one pod.
	PerPod resources.Requests
	// Tolerations are the pod template's tolerations.
	Tolerations []corev1.Toleration
	// NodeSelector is the pod template's node selector.
	NodeSelector map[string]string
	// NodeAffinity is the pod template's required node affinity; nil
	// when it has none.
	NodeAffinity *corev1.NodeSelector
	// Topology is how the podset asks to be placed in a flavor's
	// topology; TopologyError says why its annotations cannot be honoured.
	Topology      TopologyRequest
	TopologyError error
	// Flavors, when not nil, are the only flavors the podset may take, by
	// resource: a slice of an elastic job runs where its job runs. A
	// resource it does not name may take no flavor.
	Flavors map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference
}

// Info is the admission view of a Workload. It is immutable: build a new
// one when the object changes.
type Info struct {
	// Obj is the object the Info was built from. Never mutate it.
	Obj *berthv1alpha1.Workload
	// Key is "namespace/name".
	Key string
	// Priority is spec.priority, 0 when unset.
	Priority int32
	// QueueTime orders workloads of equal priority; see QueueTime.
	QueueTime time.Time
	// PodSets are the requests per podset, in spec order.
	PodSets []PodSetInfo
	// ClusterQueue is the queue holding quota for the workload, empty when
	// it holds none.
	ClusterQueue berthv1alpha1.ClusterQueueReference
	// Usage is the quota held, from status.admission.
	Usage resources.Usage
	// ReservedAt is when quota was reserved: the QuotaReserved condition's
	// lastTransitionTime, or the assume time. Preemption prefers the most
	// recent, which has lost the least work.
	ReservedAt time.Time
	// Evicting is true when the workload holds quota but was told to stop:
	// its quota will be released soon, so preemptors wait for it.
	Evicting bool
	// Placements are where its podsets' pods go in flavors' topologies,
	// when they were admitted to flavors that have one.
	Placements []Placement
}

// NewInfo builds the Info of wl.
func NewInfo(wl *berthv1alpha1.Workload) *Info {
	info := &Info{
		Obj:       wl,
		Key:       Key(wl),
		Priority:  Priority(wl),
		QueueTime: QueueTime(wl),
		PodSets:   make([]PodSetInfo, len(wl.Spec.PodSets)),
	}
	pinned := SliceFlavors(wl)
	for i := range wl.Spec.PodSets {
		info.PodSets[i] = newPodSetInfo(&wl.Spec.PodSets[i])
		if pinned != nil {
			info.PodSets[i].Flavors = pinned[wl.Spec.PodSets[i].Name]
			if info.PodSets[i].Flavors == nil {
				info.PodSets[i].Flavors = map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{}
			}
		}
	}
	if adm := wl.Status.Admission; adm != nil && HasQuotaReservation(wl) {
		info.ClusterQueue = adm.ClusterQueue
		info.Usage = AdmissionUsage(adm)
		info.Evicting = IsEvicted(wl)
		info.Placements = placements(wl, adm, info)
		if c := FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved); c != nil {
			info.ReservedAt = c.LastTransitionTime.Time
		}
	}
	return info
}

// SliceFlavors are the flavors a slice of an elastic job must take, by
// podset and resource, from its SliceFlavorsAnnotation; nil for another
// Workload. A value that cannot be read pins every podset to no flavor:
// the slice then waits, and says so, rather than take another flavor.
func SliceFlavors(wl *berthv1alpha1.Workload) map[string]map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference {
	v, ok := wl.Annotations[berthv1alpha1.SliceFlavorsAnnotation]
	if !ok {
		return nil
	}
	out := map[string]map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return map[string]map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{}
	}
	return out
}

func newPodSetInfo(ps *berthv1alpha1.PodSet) PodSetInfo {
	min := ps.Count
	if ps.MinCount != nil && *ps.MinCount < ps.Count {
		min = *ps.MinCount
	}
	spec := &ps.Template.Spec
	info := PodSetInfo{
		Name:         ps.Name,
		Count:        ps.Count,
		MinCount:     min,
		PerPod:       PodRequests(spec),
		Tolerations:  spec.Tolerations,
		NodeSelector: spec.NodeSelector,
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		info.NodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(ps.Template.Annotations) > 0 {
		info.Topology, info.TopologyError = PodSetTopologyRequest(ps)
	}
	return info
}

// PodRequests is what one pod of spec takes from quota: its effective
// requests as Kubernetes computes them (k8s.io/component-helpers), with
// sidecar (restartable init) containers added to the containers, other init
// containers as a maximum, the pod-level resources where set, and the
// overhead. A container's limit stands for its missing request, as the API
// server defaults a pod: a template's GPUs asked for in limits alone are
// counted. What a namespace's LimitRanges or a RuntimeClass add to a pod
// is not in spec unless ApplyPodDefaults put it there.
func PodRequests(spec *corev1.PodSpec) resources.Requests {
	pod := &corev1.Pod{Spec: *spec}
	pod.Spec.Containers = requestsFromLimits(spec.Containers)
	pod.Spec.InitContainers = requestsFromLimits(spec.InitContainers)
	if r := spec.Resources; r != nil && len(r.Limits) > 0 {
		pod.Spec.Resources = &corev1.ResourceRequirements{Requests: withMissing(r.Requests, r.Limits), Limits: r.Limits}
	}
	return resources.FromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}

// RunningPodRequests is what a pod that exists holds on its node: its
// effective requests, with what an in-place resize allocated.
func RunningPodRequests(pod *corev1.Pod) resources.Requests {
	return resources.FromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true}))
}

// requestsFromLimits is cs with each container's limits standing for its
// missing requests; cs itself when no container misses one.
func requestsFromLimits(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for i := range cs {
		r := &cs[i].Resources
		if !missesRequests(r.Requests, r.Limits) {
			continue
		}
		if out == nil {
			out = slices.Clone(cs)
		}
		out[i].Resources.Requests = withMissing(r.Requests, r.Limits)
	}
	if out == nil {
		return cs
	}
	return out
}

func missesRequests(requests, limits corev1.ResourceList) bool {
	for name := range limits {
		if _, ok := requests[name]; !ok {
			return true
		}
	}
	return false
}

// withMissing is a copy of l with the entries of add it does not have.
func withMissing(l, add corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l)+len(add))
	for name, q := range add {
		out[name] = q
	}
	for name, q := range l {
		out[name] = q
	}
	return out
}

// AdmissionUsage is the quota an admission holds, per flavor and resource.
func AdmissionUsage(adm *berthv1alpha1.Admission) resources.Usage {
	u := resources.Usage{}
	for _, psa := range adm.PodSetAssignments {
		for name, q := range psa.ResourceUsage {
			flavor, ok := psa.Flavors[name]
			if !ok {
				// Not counted against quota: the queue does not cover it.
				continue
			}
			fr := resources.FlavorResource{Flavor: flavor, Resource: name}
			u[fr] = resources.Add(u[fr], resources.Value(name, q))
		}
	}
	return u
}

// Key is the "namespace/name" key of wl.
func Key(wl *berthv1alpha1.Workload) string {
	return wl.Namespace + "/" + wl.Name
}

// LocalQueueKey is the "namespace/name" of the LocalQueue wl is submitted
// to.
func LocalQueueKey(wl *berthv1alpha1.Workload) string {
	return wl.Namespace + "/" + string(wl.Spec.QueueName)
}

// Priority is wl's resolved priority, 0 when unset.
func Priority(wl *berthv1alpha1.Workload) int32 {
	if wl.Spec.Priority != nil {
		return *wl.Spec.Priority
	}
	return 0
}

// QueueTime is when wl entered its queue: its creation time, or, once it
// was evicted, the lastTransitionTime of its Evicted=True or Requeued=True
// condition (the later of the two). An evicted workload thus goes behind
// the workloads of its priority that waited while it ran, which also keeps
// two workloads of equal priority from preempting each other in turn.
func QueueTime(wl *berthv1alpha1.Workload) time.Time {
	return Ordering{}.QueueTime(wl)
}

// Ordering says where an evicted workload goes back in its queue
// (waitForPodsReady.requeuingStrategy.timestamp).
type Ordering struct {
	// PodsReadyByCreation places a workload evicted for a pods-ready
	// timeout by its creation time, not its eviction's: it goes back ahead
	// of the workloads of its priority created after it.
	PodsReadyByCreation bool
}

// QueueTime is QueueTime under o.
func (o Ordering) QueueTime(wl *berthv1alpha1.Workload) time.Time {
	t := wl.CreationTimestamp.Time
	for _, typ := range []string{berthv1alpha1.WorkloadEvicted, berthv1alpha1.WorkloadRequeued} {
		c := FindCondition(wl, typ)
		if c == nil || c.Status != metav1.ConditionTrue {
			continue
		}
		if o.PodsReadyByCreation && c.Reason == berthv1alpha1.ReasonPodsReadyTimeout {
			return wl.CreationTimestamp.Time
		}
		if c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime.Time
		}
	}
	return t
}
