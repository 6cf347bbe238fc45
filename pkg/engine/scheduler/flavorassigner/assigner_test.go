package flavorassigner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestAssign(t *testing.T) {
	gpuQuota := func(f, nominal string) berthv1alpha1.FlavorQuotas {
		return utiltesting.MakeFlavorQuotas(f).Resource("nvidia.com/gpu", nominal).Obj()
	}
	within := berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority}
	cases := map[string]struct {
		cq          *berthv1alpha1.ClusterQueue
		peers       []*berthv1alpha1.ClusterQueue
		admitted    []*berthv1alpha1.Workload
		wl          *berthv1alpha1.Workload
		wantMode    Mode
		wantBorrows bool
		wantCounts  []int32
		wantFlavors []string
		wantMsg     string
	}{
		"fit": {
			cq:       utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4")).Obj(),
			wl:       utiltesting.MakeWorkload("a", "ns").Request(2, "nvidia.com/gpu", "2").Obj(),
			wantMode: Fit, wantCounts: []int32{2}, wantFlavors: []string{"h100"},
		},
		"nothing to borrow in a cohort of one": {
			cq:       utiltesting.MakeClusterQueue("q").Cohort("c").ResourceGroup(gpuQuota("h100", "2")).Obj(),
			admitted: []*berthv1alpha1.Workload{},
			wl:       utiltesting.MakeWorkload("a", "ns").Request(1, "nvidia.com/gpu", "3").Obj(),
			wantMode: NoFit, wantCounts: []int32{1}, wantFlavors: []string{""},
		},
		"preempt needs a policy": {
			cq:       utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4")).Preemption(within).Obj(),
			admitted: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("x", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj()},
			wl:       utiltesting.MakeWorkload("a", "ns").Request(1, "nvidia.com/gpu", "1").Obj(),
			wantMode: Preempt, wantBorrows: true, wantCounts: []int32{1}, wantFlavors: []string{"h100"},
		},
		"a flavor that borrows beats a later one that preempts": {
			cq: utiltesting.MakeClusterQueue("q").Cohort("c").ResourceGroup(gpuQuota("h100", "1"), gpuQuota("a100", "4")).Preemption(within).
				Fungibility(berthv1alpha1.FlavorFungibility{WhenCanBorrow: berthv1alpha1.TryNextFlavor, WhenCanPreempt: berthv1alpha1.MayStopSearch}).Obj(),
			peers:    []*berthv1alpha1.ClusterQueue{utiltesting.MakeClusterQueue("lender").Cohort("c").ResourceGroup(gpuQuota("h100", "4"), gpuQuota("a100", "0")).Obj()},
			admitted: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("x", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "a100").Obj()},
			wl:       utiltesting.MakeWorkload("a", "ns").Request(1, "nvidia.com/gpu", "2").Obj(),
			wantMode: Borrow, wantBorrows: true, wantCounts: []int32{1}, wantFlavors: []string{"h100"},
		},
		"having tried every flavor, borrowing before preempting by default": {
			cq: utiltesting.MakeClusterQueue("q").Cohort("c").ResourceGroup(gpuQuota("h100", "1"), gpuQuota("a100", "4")).Preemption(within).
				Fungibility(berthv1alpha1.FlavorFungibility{WhenCanBorrow: berthv1alpha1.TryNextFlavor, WhenCanPreempt: berthv1alpha1.TryNextFlavor}).Obj(),
			peers:    []*berthv1alpha1.ClusterQueue{utiltesting.MakeClusterQueue("lender").Cohort("c").ResourceGroup(gpuQuota("h100", "4"), gpuQuota("a100", "0")).Obj()},
			admitted: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("x", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "a100").Obj()},
			wl:       utiltesting.MakeWorkload("a", "ns").Request(1, "nvidia.com/gpu", "2").Obj(),
			wantMode: Borrow, wantBorrows: true, wantCounts: []int32{1}, wantFlavors: []string{"h100"},
		},
		"having tried every flavor, preempting within the nominal quota before borrowing": {
			cq: utiltesting.MakeClusterQueue("q").Cohort("c").ResourceGroup(gpuQuota("h100", "1"), gpuQuota("a100", "4")).Preemption(within).
				Fungibility(berthv1alpha1.FlavorFungibility{WhenCanBorrow: berthv1alpha1.TryNextFlavor, WhenCanPreempt: berthv1alpha1.TryNextFlavor,
					Preference: berthv1alpha1.PreemptionOverBorrowing}).Obj(),
			peers:    []*berthv1alpha1.ClusterQueue{utiltesting.MakeClusterQueue("lender").Cohort("c").ResourceGroup(gpuQuota("h100", "4"), gpuQuota("a100", "0")).Obj()},
			admitted: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("x", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "a100").Obj()},
			wl:       utiltesting.MakeWorkload("a", "ns").Request(1, "nvidia.com/gpu", "2").Obj(),
			wantMode: Preempt, wantBorrows: true, wantCounts: []int32{1}, wantFlavors: []string{"a100"},
		},
		"node selector excludes a flavor": {
			cq: utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4"), gpuQuota("a100", "4")).Obj(),
			wl: utiltesting.MakeWorkload("a", "ns").PodSets(*utiltesting.MakePodSet("main", 1).Request("nvidia.com/gpu", "1").
				NodeSelector("family", "a100").Obj()).Obj(),
			wantMode: Fit, wantCounts: []int32{1}, wantFlavors: []string{"a100"},
		},
		"two podsets whose sum does not fit in 64 bits": {
			cq: utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4")).Obj(),
			wl: utiltesting.MakeWorkload("a", "ns").PodSets(
				*utiltesting.MakePodSet("small", 1).Request("nvidia.com/gpu", "2").Obj(),
				*utiltesting.MakePodSet("huge", 1).Request("nvidia.com/gpu", "9223372036854775806").Obj(),
			).Obj(),
			wantMode: NoFit, wantCounts: []int32{1, 1}, wantFlavors: []string{"h100", ""},
		},
		"partial admission scales every podset": {
			cq: utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "10")).Obj(),
			wl: utiltesting.MakeWorkload("a", "ns").PodSets(
				*utiltesting.MakePodSet("a", 8).MinCount(2).Request("nvidia.com/gpu", "1").Obj(),
				*utiltesting.MakePodSet("b", 4).Request("nvidia.com/gpu", "1").Obj(),
			).Obj(),
			wantMode: Fit, wantCounts: []int32{6, 4}, wantFlavors: []string{"h100", "h100"},
		},
		"a slice takes its job's flavor, though an earlier one fits": {
			cq:       utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4"), gpuQuota("a100", "4")).Obj(),
			wl:       slice(`{"main":{"nvidia.com/gpu":"a100"}}`),
			wantMode: Fit, wantCounts: []int32{2}, wantFlavors: []string{"a100"},
		},
		"a slice waits for its job's flavor rather than take another": {
			cq:       utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4"), gpuQuota("a100", "1")).Obj(),
			wl:       slice(`{"main":{"nvidia.com/gpu":"a100"}}`),
			wantMode: NoFit, wantCounts: []int32{2}, wantFlavors: []string{""},
			wantMsg: "podset main: flavor a100: needs 2 nvidia.com/gpu, 1 available (nominal 1, in use 0)",
		},
		"a slice whose job's flavor the queue no longer has says so": {
			cq:       utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4")).Obj(),
			wl:       slice(`{"main":{"nvidia.com/gpu":"a100"}}`),
			wantMode: NoFit, wantCounts: []int32{2}, wantFlavors: []string{""},
			wantMsg: "podset main: flavor a100, in which the slice's job runs, is no longer one of the ClusterQueue's",
		},
		"a slice whose flavors cannot be read takes none": {
			cq:       utiltesting.MakeClusterQueue("q").ResourceGroup(gpuQuota("h100", "4")).Obj(),
			wl:       slice(`not json`),
			wantMode: NoFit, wantCounts: []int32{2}, wantFlavors: []string{""},
			wantMsg: "podset main: the slice's job runs in no flavor of the ClusterQueue that covers this resource",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := cache.New()
			for _, f := range []string{"h100", "a100"} {
				rf := utiltesting.MakeResourceFlavor(f)
				rf.Spec.NodeLabels = map[string]string{"family": f}
				c.AddOrUpdateResourceFlavor(rf)
			}
			c.AddOrUpdateClusterQueue(tc.cq)
			for _, cq := range tc.peers {
				c.AddOrUpdateClusterQueue(cq)
			}
			for _, w := range tc.admitted {
				c.AddOrUpdateWorkload(w)
			}
			s := c.Snapshot()
			a := Assign(s, s.ClusterQueues["q"], workload.NewInfo(tc.wl))
			var counts []int32
			var flavors []string
			for _, ps := range a.PodSets {
				counts = append(counts, ps.Count)
				flavors = append(flavors, string(ps.Flavors["nvidia.com/gpu"]))
			}
			if diff := cmp.Diff(tc.wantMode, a.Mode); diff != "" {
				t.Errorf("mode (-want +got):\n%s\nmessage: %s", diff, a.Message())
			}
			if diff := cmp.Diff(tc.wantBorrows, a.Borrows); diff != "" {
				t.Errorf("borrows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCounts, counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFlavors, flavors); diff != "" {
				t.Errorf("flavors (-want +got):\n%s", diff)
			}
			if tc.wantMsg != "" && a.Message() != tc.wantMsg {
				t.Errorf("message = %q, want %q", a.Message(), tc.wantMsg)
			}
		})
	}
}

// slice is a Workload of 2 pods of one GPU pinned to the flavors of
// its annotation, as a slice of an elastic job is.
func slice(flavors string) *berthv1alpha1.Workload {
	wl := utiltesting.MakeWorkload("slice", "ns").Request(2, "nvidia.com/gpu", "1").Obj()
	wl.Annotations = map[string]string{berthv1alpha1.SliceFlavorsAnnotation: flavors}
	return wl
}
