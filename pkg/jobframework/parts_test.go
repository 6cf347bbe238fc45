package jobframework

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

func podSetOf(name string, count int32, cpu string) berthv1alpha1.PodSet {
	return berthv1alpha1.PodSet{Name: name, Count: count, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}},
	}}}
}

func TestOutsideAdmission(t *testing.T) {
	// Admitted: init, 1 pod of 1 cpu; node, 3 of the 4 pods of 2 cpus
	// asked for (partial admission).
	wl := &berthv1alpha1.Workload{
		Spec: berthv1alpha1.WorkloadSpec{PodSets: []berthv1alpha1.PodSet{podSetOf("init", 1, "1"), podSetOf("node", 4, "2")}},
		Status: berthv1alpha1.WorkloadStatus{Admission: &berthv1alpha1.Admission{PodSetAssignments: []berthv1alpha1.PodSetAssignment{
			{Name: "init", Count: ptr.To[int32](1)}, {Name: "node", Count: ptr.To[int32](3)},
		}}},
	}
	cases := map[string]struct {
		podSets []berthv1alpha1.PodSet
		want    []string
	}{
		"as admitted":               {podSets: []berthv1alpha1.PodSet{podSetOf("init", 1, "1"), podSetOf("node", 3, "2")}},
		"in another order":          {podSets: []berthv1alpha1.PodSet{podSetOf("node", 3, "2"), podSetOf("init", 1, "1")}},
		"fewer pods":                {podSets: []berthv1alpha1.PodSet{podSetOf("node", 1, "2")}},
		"more pods than admitted":   {podSets: []berthv1alpha1.PodSet{podSetOf("init", 1, "1"), podSetOf("node", 4, "2")}, want: []string{"podset node: 4 pods, admitted 3"}},
		"larger pods":               {podSets: []berthv1alpha1.PodSet{podSetOf("init", 1, "1"), podSetOf("node", 3, "4")}, want: []string{"podset node: other requests per pod"}},
		"larger pods, one podset":   {podSets: []berthv1alpha1.PodSet{podSetOf("node", 2, "8")}, want: []string{"podset node: other requests per pod"}},
		"a podset never admitted":   {podSets: []berthv1alpha1.PodSet{podSetOf("init", 1, "1"), podSetOf("extra", 1, "1")}, want: []string{"podset extra was not admitted"}},
		"several things, all named": {podSets: []berthv1alpha1.PodSet{podSetOf("init", 2, "1"), podSetOf("node", 3, "3")}, want: []string{"podset init: 2 pods, admitted 1", "podset node: other requests"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := outsideAdmission(wl, tc.podSets)
			if len(tc.want) == 0 && got != "" {
				t.Errorf("refused: %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to say %q", got, w)
				}
			}
		})
	}
}

func TestNoMoreThan(t *testing.T) {
	have := []berthv1alpha1.PodSet{podSetOf("init", 1, "1"), podSetOf("node", 3, "2")}
	for _, tc := range []struct {
		name    string
		podSets []berthv1alpha1.PodSet
		want    bool
	}{
		{"the same", have, true},
		{"fewer pods", []berthv1alpha1.PodSet{podSetOf("node", 2, "2")}, true},
		{"more pods", []berthv1alpha1.PodSet{podSetOf("node", 4, "2")}, false},
		{"larger pods", []berthv1alpha1.PodSet{podSetOf("node", 3, "3")}, false},
		{"a new podset", []berthv1alpha1.PodSet{podSetOf("extra", 1, "1")}, false},
	} {
		if got := noMoreThan(have, tc.podSets); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
