package topology

import (
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// API renders a as a Workload's topology assignment.
func (a *Assignment) API() *berthv1alpha1.TopologyAssignment {
	out := &berthv1alpha1.TopologyAssignment{Levels: a.Levels, Domains: make([]berthv1alpha1.TopologyDomainAssignment, len(a.Domains))}
	for i, d := range a.Domains {
		out.Domains[i] = berthv1alpha1.TopologyDomainAssignment{Values: d.Values, Count: d.Count}
	}
	return out
}

// FromAPI is the assignment a Workload's admission names.
func FromAPI(a *berthv1alpha1.TopologyAssignment) *Assignment {
	out := &Assignment{Levels: a.Levels, Domains: make([]Domain, len(a.Domains))}
	for i, d := range a.Domains {
		out.Domains[i] = Domain{Values: d.Values, Count: d.Count}
	}
	return out
}
