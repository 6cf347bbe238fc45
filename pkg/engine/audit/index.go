package audit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// index finds a pod's Workload, a LocalQueue's ClusterQueue and a pod's
// requests.
type index struct {
	memo   *Memo
	byName map[types.NamespacedName]*berthv1alpha1.Workload
	// byOwner is the Workload that each owner UID owns; coOwned holds
	// every Workload of the owners of several.
	byOwner map[types.UID]*berthv1alpha1.Workload
	coOwned map[types.UID][]*berthv1alpha1.Workload
	// clusterQueues is each LocalQueue's ClusterQueue.
	clusterQueues map[types.NamespacedName]string
}

func newIndex(workloads []*berthv1alpha1.Workload, localQueues []*berthv1alpha1.LocalQueue) *index {
	ix := &index{
		byName:        make(map[types.NamespacedName]*berthv1alpha1.Workload, len(workloads)),
		byOwner:       make(map[types.UID]*berthv1alpha1.Workload, len(workloads)),
		coOwned:       map[types.UID][]*berthv1alpha1.Workload{},
		clusterQueues: make(map[types.NamespacedName]string, len(localQueues)),
	}
	for _, wl := range workloads {
		ix.byName[types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}] = wl
		for _, ref := range wl.OwnerReferences {
			ix.addOwned(ref.UID, wl)
		}
	}
	for _, lq := range localQueues {
		ix.clusterQueues[types.NamespacedName{Namespace: lq.Namespace, Name: lq.Name}] = string(lq.Spec.ClusterQueue)
	}
	return ix
}

func (ix *index) addOwned(owner types.UID, wl *berthv1alpha1.Workload) {
	first, ok := ix.byOwner[owner]
	switch {
	case owner == "":
	case !ok:
		ix.byOwner[owner] = wl
	case len(ix.coOwned[owner]) == 0:
		ix.coOwned[owner] = []*berthv1alpha1.Workload{first, wl}
	default:
		ix.coOwned[owner] = append(ix.coOwned[owner], wl)
	}
}

// workloadOf is the Workload pod belongs to, nil if none: the one its
// owner references prove, or else the one its label names.
func (ix *index) workloadOf(pod *corev1.Pod) *berthv1alpha1.Workload {
	if wl := ix.ownedBy(pod.UID, pod.Namespace); wl != nil {
		return wl
	}
	for i := range pod.OwnerReferences {
		if ref := &pod.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			if wl := ix.ownedBy(ref.UID, pod.Namespace); wl != nil {
				return wl
			}
		}
	}
	if name := pod.Labels[berthv1alpha1.WorkloadLabel]; name != "" {
		return ix.byName[types.NamespacedName{Namespace: pod.Namespace, Name: name}]
	}
	return nil
}

// ownedBy is the one Workload in namespace that owner owns, or the one of
// them that holds quota; nil when there is no such single Workload.
func (ix *index) ownedBy(owner types.UID, namespace string) *berthv1alpha1.Workload {
	if wl, ok := ix.byOwner[owner]; ok && len(ix.coOwned[owner]) == 0 {
		if wl.Namespace != namespace {
			return nil
		}
		return wl
	}
	var only, holding *berthv1alpha1.Workload
	n, held := 0, 0
	for _, wl := range ix.coOwned[owner] {
		if wl.Namespace != namespace {
			continue
		}
		only, n = wl, n+1
		if holdsQuota(wl) {
			holding, held = wl, held+1
		}
	}
	switch {
	case held == 1:
		return holding
	case n == 1:
		return only
	}
	return nil
}
