package workload

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// AdmittedCounts is the number of pods admitted for each podset of an
// admitted workload, by name: the assignment's count, else the podset's.
func AdmittedCounts(wl *berthv1alpha1.Workload) map[string]int32 {
	out := map[string]int32{}
	if wl.Status.Admission == nil {
		return out
	}
	for i := range wl.Spec.PodSets {
		out[wl.Spec.PodSets[i].Name] = wl.Spec.PodSets[i].Count
	}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		if psa.Count != nil {
			out[psa.Name] = *psa.Count
		}
	}
	return out
}

// Grow adds the admission of slice, a Workload admitted for more pods of
// an elastic job, to the admission of the job's Workload: each podset's
// count and quota grow by the slice's, in the same flavors. The slice
// must then be deleted, which gives its own quota back; until then the
// quota is counted twice, which admits less, never more. It changes
// nothing unless every podset of the slice is one of the workload's, in
// the same flavors.
func Grow(slice *berthv1alpha1.Admission) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		adm := wl.Status.Admission
		if adm == nil || !SameFlavors(adm, slice) {
			return false
		}
		counts := AdmittedCounts(wl)
		grown := adm.DeepCopy()
		for _, add := range slice.PodSetAssignments {
			for i := range grown.PodSetAssignments {
				psa := &grown.PodSetAssignments[i]
				if psa.Name != add.Name {
					continue
				}
				psa.Count = ptr.To(sat32(int64(counts[psa.Name]) + int64(ptr.Deref(add.Count, 0))))
				if psa.ResourceUsage == nil {
					psa.ResourceUsage = corev1.ResourceList{}
				}
				for name, q := range add.ResourceUsage {
					have := resources.Value(name, psa.ResourceUsage[name])
					psa.ResourceUsage[name] = resources.Quantity(name, resources.Add(have, resources.Value(name, q)))
				}
				psa.TopologyAssignment = addDomains(psa.TopologyAssignment, add.TopologyAssignment)
			}
		}
		wl.Status.Admission = grown
		return true
	}
}

// SameFlavors reports whether every podset of slice is one of adm's, with
// the same flavor for each resource it takes.
func SameFlavors(adm, slice *berthv1alpha1.Admission) bool {
	for _, s := range slice.PodSetAssignments {
		found := false
		for _, a := range adm.PodSetAssignments {
			if a.Name != s.Name {
				continue
			}
			found = true
			for r, f := range s.Flavors {
				if a.Flavors[r] != f {
					return false
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Shrink lowers the admitted count of podsets of an admitted workload to
// counts, by name, and their quota with it: an elastic job scaled down and
// the pods it removed have ended. A count that is not lower is left.
func Shrink(counts map[string]int32) Change {
	return func(wl *berthv1alpha1.Workload) bool {
		adm := wl.Status.Admission
		if adm == nil {
			return false
		}
		have := AdmittedCounts(wl)
		var shrunk *berthv1alpha1.Admission
		for i, psa := range adm.PodSetAssignments {
			n, ok := counts[psa.Name]
			old := have[psa.Name]
			if !ok || n >= old || n < 1 {
				continue
			}
			if shrunk == nil {
				shrunk = adm.DeepCopy()
			}
			p := &shrunk.PodSetAssignments[i]
			p.Count = ptr.To(n)
			p.ResourceUsage = maps.Clone(p.ResourceUsage)
			for name, q := range psa.ResourceUsage {
				// The usage is the per-pod request times the count.
				per := resources.Value(name, q) / int64(old)
				p.ResourceUsage[name] = resources.Quantity(name, resources.Mul(per, int64(n)))
			}
			p.TopologyAssignment = trimDomains(p.TopologyAssignment, n)
		}
		if shrunk == nil {
			return false
		}
		wl.Status.Admission = shrunk
		return true
	}
}

// addDomains is the topology assignment of a podset grown by add's pods:
// a domain in both takes both counts, a domain of add's alone is added.
// Either may be nil (a podset not placed on a Topology).
func addDomains(ta, add *berthv1alpha1.TopologyAssignment) *berthv1alpha1.TopologyAssignment {
	if ta == nil || add == nil {
		return ta
	}
	out := ta.DeepCopy()
	for _, d := range add.Domains {
		i := slices.IndexFunc(out.Domains, func(have berthv1alpha1.TopologyDomainAssignment) bool {
			return slices.Equal(have.Values, d.Values)
		})
		if i < 0 {
			out.Domains = append(out.Domains, *d.DeepCopy())
			continue
		}
		out.Domains[i].Count = sat32(int64(out.Domains[i].Count) + int64(d.Count))
	}
	return out
}

// trimDomains is a topology assignment of n pods from ta, taking pods off
// its last domains first. Which pods of an elastic job ended is not known
// here; the nodes' bound pods, which admission reads, are exact, and a
// count left where no pod runs only holds room, it never gives room that
// is taken.
func trimDomains(ta *berthv1alpha1.TopologyAssignment, n int32) *berthv1alpha1.TopologyAssignment {
	if ta == nil {
		return nil
	}
	out := ta.DeepCopy()
	var kept int32
	for i := range out.Domains {
		c := min(out.Domains[i].Count, n-kept)
		out.Domains[i].Count = c
		kept += c
		if c == 0 {
			out.Domains = out.Domains[:i]
			break
		}
	}
	return out
}

// sat32 is n within the range of a pod count.
func sat32(n int64) int32 {
	return int32(min(max(n, 0), 1<<31-1))
}
