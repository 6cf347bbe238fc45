package jobframework

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestWorkloadNameFitsALabel checks that the name of a job's Workload can
// be the value of the label berth.dev/workload on its pods, whatever the
// length of the job's name: an admission whose labels the API server
// refuses never runs, and holds its quota.
func TestWorkloadNameFitsALabel(t *testing.T) {
	kinds := []schema.GroupVersionKind{
		batchv1.SchemeGroupVersion.WithKind("Job"),
		corev1.SchemeGroupVersion.WithKind("Pod"),
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
	}
	seen := map[string]bool{}
	for _, gvk := range kinds {
		for _, n := range []int{1, 48, 49, 63, 64, 200, 253} {
			name := strings.Repeat("a", n-1) + "b"
			wl := WorkloadName(gvk, name, "uid-"+name)
			if errs := validation.IsValidLabelValue(wl); len(errs) > 0 {
				t.Errorf("%s named with %d characters: Workload %q is not a label value: %v", gvk.Kind, n, wl, errs)
			}
			if errs := validation.IsDNS1123Subdomain(wl); len(errs) > 0 {
				t.Errorf("%s named with %d characters: Workload %q is not an object name: %v", gvk.Kind, n, wl, errs)
			}
			if seen[wl] {
				t.Errorf("%s named with %d characters: Workload name %q given twice", gvk.Kind, n, wl)
			}
			seen[wl] = true
		}
	}
	if a, b := WorkloadName(kinds[0], "j", "uid-1"), WorkloadName(kinds[0], "j", "uid-2"); a == b {
		t.Errorf("a job created again under its name gets the same Workload %s", a)
	}
}

func TestFitName(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, maxLen := range []int{63, 189, 253} {
		got := FitName(long, maxLen)
		if len(got) > maxLen {
			t.Errorf("FitName(%d characters, %d) has %d", len(long), maxLen, len(got))
		}
		if other := FitName(long[:299]+"y", maxLen); other == got {
			t.Errorf("two long names that begin alike fit as the same %q", got)
		}
	}
	if got := FitName("short", 63); got != "short" {
		t.Errorf("FitName(short) = %q, want it unchanged", got)
	}
}
