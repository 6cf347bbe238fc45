package jobframework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// TestTopologyConstraints: the values the domains share go in the node
// selector; from the first level where they differ, each level is
// required to be one of the domains' values.
func TestTopologyConstraints(t *testing.T) {
	levels := []string{"block", "rack", "host"}
	domain := func(count int32, values ...string) berthv1alpha1.TopologyDomainAssignment {
		return berthv1alpha1.TopologyDomainAssignment{Values: values, Count: count}
	}
	in := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	cases := map[string]struct {
		domains      []berthv1alpha1.TopologyDomainAssignment
		wantSelector map[string]string
		wantReqs     []corev1.NodeSelectorRequirement
	}{
		"one host": {
			domains:      []berthv1alpha1.TopologyDomainAssignment{domain(2, "b0", "r0", "h0")},
			wantSelector: map[string]string{"block": "b0", "rack": "r0", "host": "h0"},
		},
		"hosts of one rack": {
			domains:      []berthv1alpha1.TopologyDomainAssignment{domain(1, "b0", "r0", "h1"), domain(1, "b0", "r0", "h0")},
			wantSelector: map[string]string{"block": "b0", "rack": "r0"},
			wantReqs:     []corev1.NodeSelectorRequirement{in("host", "h0", "h1")},
		},
		"two racks of one block": {
			domains: []berthv1alpha1.TopologyDomainAssignment{
				domain(1, "b0", "r0", "h0"), domain(1, "b0", "r0", "h1"), domain(1, "b0", "r1", "h4"),
			},
			wantSelector: map[string]string{"block": "b0"},
			wantReqs:     []corev1.NodeSelectorRequirement{in("rack", "r0", "r1"), in("host", "h0", "h1", "h4")},
		},
		"a domain short of a value stops at that level": {
			domains:      []berthv1alpha1.TopologyDomainAssignment{domain(1, "b0", "r0"), domain(1, "b0", "r1", "h4")},
			wantSelector: map[string]string{"block": "b0"},
			wantReqs:     []corev1.NodeSelectorRequirement{in("rack", "r0", "r1")},
		},
		"no domains": {wantSelector: map[string]string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			selector, reqs := TopologyConstraints(&berthv1alpha1.TopologyAssignment{Levels: levels, Domains: tc.domains})
			if diff := cmp.Diff(tc.wantSelector, selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReqs, reqs); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNarrowAffinity: the requirements join every required term, or make
// one; the user's other affinity stays; narrowing twice adds nothing.
func TestNarrowAffinity(t *testing.T) {
	racks := corev1.NodeSelectorRequirement{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r0", "r1"}}
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	arch := corev1.NodeSelectorRequirement{Key: "arch", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"arm64"}}
	required := func(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
		a := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		for _, exprs := range terms {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(
				a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
				corev1.NodeSelectorTerm{MatchExpressions: exprs})
		}
		return a
	}
	podAffinity := &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "host"}}}
	withPodAffinity := required([]corev1.NodeSelectorRequirement{racks})
	withPodAffinity.PodAffinity = podAffinity

	cases := map[string]struct {
		have *corev1.Affinity
		reqs []corev1.NodeSelectorRequirement
		want *corev1.Affinity
	}{
		"nothing to add":         {have: nil, want: nil},
		"no affinity":            {have: nil, reqs: []corev1.NodeSelectorRequirement{racks}, want: required([]corev1.NodeSelectorRequirement{racks})},
		"a pod affinity is kept": {have: &corev1.Affinity{PodAffinity: podAffinity}, reqs: []corev1.NodeSelectorRequirement{racks}, want: withPodAffinity},
		"every term narrowed": {
			have: required([]corev1.NodeSelectorRequirement{zone}, []corev1.NodeSelectorRequirement{arch}),
			reqs: []corev1.NodeSelectorRequirement{racks},
			want: required([]corev1.NodeSelectorRequirement{zone, racks}, []corev1.NodeSelectorRequirement{arch, racks}),
		},
		"narrowed twice, added once": {
			have: required([]corev1.NodeSelectorRequirement{zone, racks}),
			reqs: []corev1.NodeSelectorRequirement{racks},
			want: required([]corev1.NodeSelectorRequirement{zone, racks}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.have.DeepCopy()
			got := NarrowAffinity(tc.have, tc.reqs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.have); diff != "" {
				t.Errorf("the affinity given changed (-before +after):\n%s", diff)
			}
		})
	}
}
