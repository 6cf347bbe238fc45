package flavorassigner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Mode is how a workload, a podset or a flavor fits. Modes are ordered from
// worst to best, so the mode of several parts is their minimum.
type Mode int

const (
	// NoFit means it does not fit, even by preempting.
	NoFit Mode = iota
	// Preempt means it fits only if other workloads are preempted.
	Preempt
	// Borrow means it fits by borrowing from the cohort.
	Borrow
	// Fit means it fits in the queue's nominal quota.
	Fit
)

// String names the mode for messages and test output.
func (m Mode) String() string {
	return [...]string{"NoFit", "Preempt", "Borrow", "Fit"}[m]
}

// PodSetAssignment is the flavors and count chosen for one podset.
type PodSetAssignment struct {
	Name    string
	Count   int32
	Flavors map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference
	// Requests is the total for Count pods.
	Requests resources.Requests
	// Topology is where the pods go in the fabric of TopologyFlavor, when
	// the podset took a flavor that names a Topology.
	Topology       *topology.Assignment
	TopologyFlavor berthv1alpha1.ResourceFlavorReference
}

// Assignment is the outcome of flavor assignment for one workload.
type Assignment struct {
	PodSets []PodSetAssignment
	// Usage is the quota the workload would take, per flavor and resource.
	Usage resources.Usage
	// Mode is the worst mode of the chosen flavors.
	Mode Mode
	// Borrows is true when taking Usage puts the queue above its nominal
	// quota of some flavor and resource.
	Borrows bool
	// Defrag, when set, is a podset whose quota fits but which no domain
	// of its flavor's fabric has room for: the Preempt mode then asks
	// preemption to free a domain, not quota.
	Defrag *Defrag

	misses []miss
}

// Defrag is a podset that needs a domain freed.
type Defrag struct {
	Flavor  berthv1alpha1.ResourceFlavorReference
	PodSet  string
	Request topology.Request
	// Planned is where the podset goes once the victims preemption chose
	// are gone; the cycle keeps those nodes from other heads.
	Planned *topology.Assignment
}

// Admission renders a as the API's Admission in cq.
func (a *Assignment) Admission(cq berthv1alpha1.ClusterQueueReference) *berthv1alpha1.Admission {
	adm := &berthv1alpha1.Admission{ClusterQueue: cq, PodSetAssignments: make([]berthv1alpha1.PodSetAssignment, len(a.PodSets))}
	for i, ps := range a.PodSets {
		count := ps.Count
		adm.PodSetAssignments[i] = berthv1alpha1.PodSetAssignment{
			Name:          ps.Name,
			Flavors:       ps.Flavors,
			ResourceUsage: ps.Requests.ToList(),
			Count:         &count,
		}
		if ps.Topology != nil {
			adm.PodSetAssignments[i].TopologyAssignment = ps.Topology.API()
		}
	}
	return adm
}

// missKind is why a flavor, or a resource, was not a clean fit.
type missKind int

const (
	missQuota missKind = iota
	missTaint
	missSelector
	missUncovered
	missFlavorNotFound
	missPinned
	missTopology
)

// miss records one flavor tried and why it was not taken outright; only
// rendered when the workload stays pending, so the fast path allocates no
// strings.
type miss struct {
	kind     missKind
	podSet   string
	flavor   berthv1alpha1.ResourceFlavorReference
	resource corev1.ResourceName
	need     int64
	detail   cache.QuotaDetail
	taint    *corev1.Taint
	label    string
	// topology says why the flavor's nodes cannot take the podset.
	topology fmt.Stringer
}

// Placements are the workload's placements in flavors' topologies under
// a, for the cache and the snapshot.
func (a *Assignment) Placements(wl *workload.Info) []workload.Placement {
	var out []workload.Placement
	for i := range a.PodSets {
		ps := &a.PodSets[i]
		if ps.Topology == nil {
			continue
		}
		out = append(out, workload.Placement{PodSet: i, Flavor: ps.TopologyFlavor,
			PerPod: workload.PodWithRequests(wl.PodSets[i].PerPod), Assignment: ps.Topology.API()})
	}
	return out
}
