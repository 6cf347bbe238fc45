package workload_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// counts and usage of the one podset "main" of an admitted workload.
func admittedMain(wl *berthv1alpha1.Workload) (int32, string) {
	psa := wl.Status.Admission.PodSetAssignments[0]
	gpus := psa.ResourceUsage[corev1.ResourceName("nvidia.com/gpu")]
	return ptr.Deref(psa.Count, 0), gpus.String()
}

func TestGrowAndShrink(t *testing.T) {
	job := func() *berthv1alpha1.Workload {
		return utiltesting.MakeWorkload("job", "ns").Request(2, "nvidia.com/gpu", "8").AdmittedIn("q", "h100").Obj()
	}
	slice := func(flavor string) *berthv1alpha1.Admission {
		return utiltesting.MakeWorkload("job-slice", "ns").Request(3, "nvidia.com/gpu", "8").AdmittedIn("q", flavor).Obj().Status.Admission
	}
	cases := map[string]struct {
		change    workload.Change
		wantWrite bool
		wantCount int32
		wantGPUs  string
	}{
		"a slice in the job's flavor adds its pods and quota": {
			change: workload.Grow(slice("h100")), wantWrite: true, wantCount: 5, wantGPUs: "40",
		},
		"a slice in another flavor adds nothing": {
			change: workload.Grow(slice("a100")), wantCount: 2, wantGPUs: "16",
		},
		"shrinking to 1 gives one pod's quota back": {
			change: workload.Shrink(map[string]int32{"main": 1}), wantWrite: true, wantCount: 1, wantGPUs: "8",
		},
		"shrinking to as many or more changes nothing": {
			change: workload.Shrink(map[string]int32{"main": 2}), wantCount: 2, wantGPUs: "16",
		},
		"shrinking to no pod changes nothing": {
			change: workload.Shrink(map[string]int32{"main": 0}), wantCount: 2, wantGPUs: "16",
		},
		"shrinking another podset changes nothing": {
			change: workload.Shrink(map[string]int32{"workers": 1}), wantCount: 2, wantGPUs: "16",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := job()
			before := wl.DeepCopy()
			if got := tc.change(wl); got != tc.wantWrite {
				t.Errorf("changed = %v, want %v", got, tc.wantWrite)
			}
			count, gpus := admittedMain(wl)
			if diff := cmp.Diff([]any{tc.wantCount, tc.wantGPUs}, []any{count, gpus}); diff != "" {
				t.Errorf("admitted count and GPUs (-want +got):\n%s", diff)
			}
			if !tc.wantWrite && !cmp.Equal(before.Status, wl.Status) {
				t.Errorf("status changed though nothing was to be written")
			}
			if got := workload.AdmissionUsage(wl.Status.Admission); got.ByResource()["nvidia.com/gpu"] != mustInt(t, tc.wantGPUs) {
				t.Errorf("usage the cache reads = %v, want %s GPUs", got, tc.wantGPUs)
			}
		})
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGrowAndShrinkOnATopology: a slice's domains join the job's, the
// counts of a domain in both adding up; shrinking takes pods off the last
// domains first.
func TestGrowAndShrinkOnATopology(t *testing.T) {
	placed := func(wl *berthv1alpha1.Workload, domains ...berthv1alpha1.TopologyDomainAssignment) *berthv1alpha1.Workload {
		wl.Status.Admission.PodSetAssignments[0].TopologyAssignment = &berthv1alpha1.TopologyAssignment{
			Levels: []string{"rack", "host"}, Domains: domains,
		}
		return wl
	}
	on := func(host string, count int32) berthv1alpha1.TopologyDomainAssignment {
		return berthv1alpha1.TopologyDomainAssignment{Values: []string{"r0", host}, Count: count}
	}
	job := func() *berthv1alpha1.Workload {
		return placed(utiltesting.MakeWorkload("job", "ns").Request(3, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj(),
			on("h0", 2), on("h1", 1))
	}
	slice := placed(utiltesting.MakeWorkload("job-slice", "ns").Request(3, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj(),
		on("h1", 1), on("h2", 2)).Status.Admission

	cases := map[string]struct {
		change workload.Change
		want   []berthv1alpha1.TopologyDomainAssignment
	}{
		"grown":         {change: workload.Grow(slice), want: []berthv1alpha1.TopologyDomainAssignment{on("h0", 2), on("h1", 2), on("h2", 2)}},
		"shrunk to 2":   {change: workload.Shrink(map[string]int32{"main": 2}), want: []berthv1alpha1.TopologyDomainAssignment{on("h0", 2)}},
		"shrunk to one": {change: workload.Shrink(map[string]int32{"main": 1}), want: []berthv1alpha1.TopologyDomainAssignment{on("h0", 1)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl := job()
			if !tc.change(wl) {
				t.Fatal("nothing changed")
			}
			if diff := cmp.Diff(tc.want, wl.Status.Admission.PodSetAssignments[0].TopologyAssignment.Domains); diff != "" {
				t.Errorf("domains (-want +got):\n%s", diff)
			}
		})
	}
}
