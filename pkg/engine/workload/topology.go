package workload

import (
	"fmt"
	"strconv"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// TopologyRequest is how a podset asks to be placed in a flavor's
// topology, from its pod template's annotations.
type TopologyRequest struct {
	// Level is the node label of the level one of whose domains holds the
	// pods; "" places them anywhere, in as few domains as possible.
	Level string
	// Required is set when the pods must be in one domain of Level.
	Required bool
	// SliceLevel and SliceSize ask for slices of SliceSize pods each in
	// one domain of SliceLevel; SliceSize 0 asks for none.
	SliceLevel string
	SliceSize  int32
}

// PodSetTopologyRequest reads the topology annotations of a podset's pod
// template. It fails naming the annotation that cannot be honoured: both
// a required and a preferred level, or a slice without its size or level.
func PodSetTopologyRequest(ps *berthv1alpha1.PodSet) (TopologyRequest, error) {
	a := ps.Template.Annotations
	var req TopologyRequest
	required, hasRequired := a[berthv1alpha1.PodSetRequiredTopologyAnnotation]
	preferred, hasPreferred := a[berthv1alpha1.PodSetPreferredTopologyAnnotation]
	switch {
	case hasRequired && hasPreferred:
		return req, fmt.Errorf("%s and %s: a podset names at most one", berthv1alpha1.PodSetRequiredTopologyAnnotation, berthv1alpha1.PodSetPreferredTopologyAnnotation)
	case hasRequired:
		req.Level, req.Required = required, true
	case hasPreferred:
		req.Level = preferred
	}
	if (hasRequired || hasPreferred) && req.Level == "" {
		return req, fmt.Errorf("the topology level of podset %s is empty", ps.Name)
	}
	if v, ok := a[berthv1alpha1.PodSetUnconstrainedTopologyAnnotation]; ok {
		switch {
		case v != "true" && v != "false":
			return req, fmt.Errorf("%s is %q: true or false", berthv1alpha1.PodSetUnconstrainedTopologyAnnotation, v)
		case v == "true" && (hasRequired || hasPreferred):
			return req, fmt.Errorf("%s and a topology level: a podset names at most one", berthv1alpha1.PodSetUnconstrainedTopologyAnnotation)
		}
	}
	sliceLevel, hasSliceLevel := a[berthv1alpha1.PodSetSliceRequiredTopologyAnnotation]
	size, hasSize := a[berthv1alpha1.PodSetSliceSizeAnnotation]
	if hasSliceLevel != hasSize {
		return req, fmt.Errorf("%s and %s go together", berthv1alpha1.PodSetSliceRequiredTopologyAnnotation, berthv1alpha1.PodSetSliceSizeAnnotation)
	}
	if hasSize {
		n, err := strconv.ParseInt(size, 10, 32)
		if err != nil || n < 1 || sliceLevel == "" {
			return req, fmt.Errorf("%s is %q: a whole number above 0, with a level", berthv1alpha1.PodSetSliceSizeAnnotation, size)
		}
		if int32(n) > ps.Count || ps.Count%int32(n) != 0 {
			return req, fmt.Errorf("%s is %d, which does not divide the podset's %d pods", berthv1alpha1.PodSetSliceSizeAnnotation, n, ps.Count)
		}
		req.SliceLevel, req.SliceSize = sliceLevel, int32(n)
	}
	return req, nil
}

// Placement is where an admitted podset's pods go in its flavor's
// topology.
type Placement struct {
	// PodSet is the podset's index.
	PodSet int
	// Flavor is the flavor whose fabric holds the pods.
	Flavor berthv1alpha1.ResourceFlavorReference
	// PerPod is the request of one pod, with the pod it is.
	PerPod resources.Requests
	// Assignment is the admission's topology assignment.
	Assignment *berthv1alpha1.TopologyAssignment
}

// placements are the topology assignments of an admission.
func placements(wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission, info *Info) []Placement {
	var out []Placement
	for i := range adm.PodSetAssignments {
		psa := &adm.PodSetAssignments[i]
		if psa.TopologyAssignment == nil {
			continue
		}
		for j := range wl.Spec.PodSets {
			if wl.Spec.PodSets[j].Name != psa.Name {
				continue
			}
			var flavor berthv1alpha1.ResourceFlavorReference
			for _, f := range psa.Flavors {
				flavor = f
				break
			}
			out = append(out, Placement{PodSet: j, Flavor: flavor, PerPod: PodWithRequests(info.PodSets[j].PerPod), Assignment: psa.TopologyAssignment})
		}
	}
	return out
}

// PodWithRequests is a pod's requests with the pod itself counted, against
// a node's allocatable pods.
func PodWithRequests(perPod resources.Requests) resources.Requests {
	out := make(resources.Requests, len(perPod)+1)
	for r, v := range perPod {
		out[r] = v
	}
	out["pods"] = 1
	return out
}
