package workload

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// PodSetsDiffer says how want differs from have in what admission looks
// at: the podsets, their counts, each pod's requests, node selector and
// tolerations. It is empty when admission would decide the same for both:
// a workload admitted for have may run pods of want.
func PodSetsDiffer(have, want []berthv1alpha1.PodSet) string {
	if len(have) != len(want) {
		return fmt.Sprintf("%d podsets instead of %d", len(want), len(have))
	}
	var diffs []string
	for i := range want {
		a, b := &have[i], &want[i]
		if a.Name != b.Name {
			diffs = append(diffs, fmt.Sprintf("podset %d is %s instead of %s", i, b.Name, a.Name))
			continue
		}
		if a.Count != b.Count {
			diffs = append(diffs, fmt.Sprintf("podset %s: %d pods instead of %d", b.Name, b.Count, a.Count))
		}
		if (a.MinCount != nil || b.MinCount != nil) && ptr.Deref(a.MinCount, a.Count) != ptr.Deref(b.MinCount, b.Count) {
			diffs = append(diffs, fmt.Sprintf("podset %s: at least %d pods instead of %d", b.Name, ptr.Deref(b.MinCount, b.Count), ptr.Deref(a.MinCount, a.Count)))
		}
		ra, rb := PodRequests(&a.Template.Spec), PodRequests(&b.Template.Spec)
		for _, name := range union(ra, rb) {
			if ra[name] != rb[name] {
				diffs = append(diffs, fmt.Sprintf("podset %s: %s per pod %s instead of %s",
					b.Name, name, resources.Format(name, rb[name]), resources.Format(name, ra[name])))
			}
		}
		if !maps.Equal(a.Template.Spec.NodeSelector, b.Template.Spec.NodeSelector) {
			diffs = append(diffs, fmt.Sprintf("podset %s: another node selector", b.Name))
		}
		if !equality.Semantic.DeepEqual(a.Template.Spec.Tolerations, b.Template.Spec.Tolerations) {
			diffs = append(diffs, fmt.Sprintf("podset %s: other tolerations", b.Name))
		}
	}
	return strings.Join(diffs, "; ")
}

func union(a, b resources.Requests) []corev1.ResourceName {
	all := resources.Requests{}
	for name := range a {
		all[name] = 1
	}
	for name := range b {
		all[name] = 1
	}
	return all.Names()
}
