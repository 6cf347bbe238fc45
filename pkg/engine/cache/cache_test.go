package cache

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func gpu(cq string, nominal string, limits ...string) *berthv1alpha1.ClusterQueue {
	return utiltesting.MakeClusterQueue(cq).ResourceGroup(
		utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", nominal, limits...).Obj()).Obj()
}

func withCohort(cq *berthv1alpha1.ClusterQueue, cohort string) *berthv1alpha1.ClusterQueue {
	cq.Spec.CohortName = berthv1alpha1.CohortReference(cohort)
	return cq
}

// newTestCache is a cache of flavor h100 with queues, cohorts and
// workloads.
func newTestCache(queues []*berthv1alpha1.ClusterQueue, cohorts []*berthv1alpha1.Cohort, workloads ...*berthv1alpha1.Workload) *Cache {
	c := New()
	c.AddOrUpdateResourceFlavor(utiltesting.MakeResourceFlavor("h100"))
	for _, q := range queues {
		c.AddOrUpdateClusterQueue(q)
	}
	for _, co := range cohorts {
		c.AddOrUpdateCohort(co)
	}
	for _, w := range workloads {
		c.AddOrUpdateWorkload(w)
	}
	return c
}

func TestAvailable(t *testing.T) {
	fr := resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}
	cases := map[string]struct {
		queues        []*berthv1alpha1.ClusterQueue
		cohorts       []*berthv1alpha1.Cohort
		workloads     []*berthv1alpha1.Workload
		wantAvailable map[berthv1alpha1.ClusterQueueReference]int64
		// wantInactive is the cohort cycle named in each inactive queue's
		// reason.
		wantInactive map[berthv1alpha1.ClusterQueueReference]string
	}{
		"no cohort": {
			queues:        []*berthv1alpha1.ClusterQueue{gpu("a", "8")},
			workloads:     []*berthv1alpha1.Workload{utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "3").AdmittedIn("a", "h100").Obj()},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 5},
		},
		"cohort lends all unused": {
			queues:        []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "c"), withCohort(gpu("b", "8"), "c")},
			workloads:     []*berthv1alpha1.Workload{utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "10").AdmittedIn("a", "h100").Obj()},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 6, "b": 6},
		},
		"borrowing limit caps the borrower": {
			queues:        []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8", "2"), "c"), withCohort(gpu("b", "8"), "c")},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 10, "b": 16},
		},
		"lending limit keeps quota private": {
			queues:        []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8", "", "3"), "c"), withCohort(gpu("b", "8"), "c")},
			workloads:     []*berthv1alpha1.Workload{utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "2").AdmittedIn("a", "h100").Obj()},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 14, "b": 11},
		},
		"lent quota in use is not available to the lender's guaranteed part": {
			queues:        []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8", "", "3"), "c"), withCohort(gpu("b", "8"), "c")},
			workloads:     []*berthv1alpha1.Workload{utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "11").AdmittedIn("b", "h100").Obj()},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 5, "b": 0},
		},
		"cohort's own quota is shared": {
			queues:        []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "0"), "c")},
			cohorts:       []*berthv1alpha1.Cohort{utiltesting.MakeCohort("c").ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "4").Obj()).Obj()},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 4},
		},
		"nested cohorts with a lending limit": {
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "left"), withCohort(gpu("b", "8"), "right")},
			cohorts: []*berthv1alpha1.Cohort{
				utiltesting.MakeCohort("left").Parent("root").ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "0", "", "2").Obj()).Obj(),
				utiltesting.MakeCohort("right").Parent("root").Obj(),
			},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 16, "b": 10},
		},
		"cohort cycle is cut": {
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "x")},
			cohorts: []*berthv1alpha1.Cohort{
				utiltesting.MakeCohort("x").Parent("y").Obj(),
				utiltesting.MakeCohort("y").Parent("x").Obj(),
			},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 8},
			wantInactive:  map[berthv1alpha1.ClusterQueueReference]string{"a": "x -> y -> x"},
		},
		"a three-cohort cycle makes every queue under it inactive": {
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "c"), withCohort(gpu("b", "8"), "d"), gpu("e", "8")},
			cohorts: []*berthv1alpha1.Cohort{
				utiltesting.MakeCohort("c").Parent("a").Obj(),
				utiltesting.MakeCohort("a").Parent("b").Obj(),
				utiltesting.MakeCohort("b").Parent("c").Obj(),
				utiltesting.MakeCohort("d").Parent("b").Obj(),
			},
			wantAvailable: map[berthv1alpha1.ClusterQueueReference]int64{"a": 16, "b": 16, "e": 8},
			wantInactive:  map[berthv1alpha1.ClusterQueueReference]string{"a": "a -> b -> c -> a", "b": "a -> b -> c -> a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newTestCache(tc.queues, tc.cohorts, tc.workloads...)
			for _, check := range []string{"fresh tree", "incremental usage"} {
				s := c.Snapshot()
				got := map[berthv1alpha1.ClusterQueueReference]int64{}
				inactive := map[berthv1alpha1.ClusterQueueReference]string{}
				for name, cq := range s.ClusterQueues {
					got[name] = cq.Available(fr)
					if cq.Inactive != "" {
						inactive[name] = cq.Inactive
						if cycle := tc.wantInactive[name]; strings.Contains(cq.Inactive, "("+cycle+")") {
							inactive[name] = cycle
						}
					}
				}
				if diff := cmp.Diff(tc.wantAvailable, got); diff != "" {
					t.Errorf("%s: available (-want +got):\n%s", check, diff)
				}
				if diff := cmp.Diff(tc.wantInactive, inactive, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: inactive queues (-want +got):\n%s", check, diff)
				}
				// Re-add the workloads on a built tree to exercise the
				// incremental path.
				for _, w := range tc.workloads {
					c.DeleteWorkload(w.Namespace + "/" + w.Name)
					c.AddOrUpdateWorkload(w)
				}
			}
		})
	}
}

func TestSnapshotIsolation(t *testing.T) {
	fr := resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}
	c := New()
	c.AddOrUpdateResourceFlavor(utiltesting.MakeResourceFlavor("h100"))
	c.AddOrUpdateClusterQueue(gpu("a", "8"))
	w := utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "3").AdmittedIn("a", "h100").Obj()
	s1 := c.Snapshot()
	c.AddOrUpdateWorkload(w)
	s2 := c.Snapshot()
	s2.RemoveWorkload(s2.ClusterQueues["a"].Workloads()["ns/w"])
	got := []int64{s1.ClusterQueues["a"].Available(fr), s2.ClusterQueues["a"].Available(fr), c.Snapshot().ClusterQueues["a"].Available(fr)}
	if diff := cmp.Diff([]int64{8, 8, 5}, got); diff != "" {
		t.Errorf("available (-want +got):\n%s", diff)
	}
	if got := len(c.Snapshot().ClusterQueues["a"].Workloads()); got != 1 {
		t.Errorf("cache lost its workload after a snapshot removed it: %d workloads", got)
	}
}

func TestInactive(t *testing.T) {
	cases := map[string]struct {
		queue        *berthv1alpha1.ClusterQueue
		wantInactive string
	}{
		"active":         {queue: gpu("a", "8")},
		"missing flavor": {queue: utiltesting.MakeClusterQueue("a").ResourceGroup(utiltesting.MakeFlavorQuotas("a100").Resource("cpu", "1").Obj()).Obj(), wantInactive: "ClusterQueue a is inactive: ResourceFlavor a100 not found"},
		"held":           {queue: utiltesting.MakeClusterQueue("a").StopPolicy(berthv1alpha1.Hold).Obj(), wantInactive: "ClusterQueue a is stopped (stopPolicy Hold)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New()
			c.AddOrUpdateResourceFlavor(utiltesting.MakeResourceFlavor("h100"))
			c.AddOrUpdateClusterQueue(tc.queue)
			if diff := cmp.Diff(tc.wantInactive, c.Snapshot().ClusterQueues["a"].Inactive); diff != "" {
				t.Errorf("inactive (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterQueueUsage(t *testing.T) {
	fr := resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}
	c := New()
	c.AddOrUpdateResourceFlavor(utiltesting.MakeResourceFlavor("h100"))
	c.AddOrUpdateClusterQueue(withCohort(gpu("a", "8"), "c"))
	c.AddOrUpdateClusterQueue(withCohort(gpu("b", "8"), "c"))
	c.AddOrUpdateWorkload(utiltesting.MakeWorkload("w", "ns").Request(2, "nvidia.com/gpu", "5").AdmittedIn("a", "h100").Obj())
	usage, borrowed, n := c.ClusterQueueUsage("a")
	got := []any{usage, borrowed, n}
	want := []any{resources.Usage{fr: 10}, resources.Usage{fr: 2}, 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage, borrowed, workloads (-want +got):\n%s", diff)
	}
}

// TestEvictingOutlivesStaleVersions: after the scheduler preempts a
// workload, the informers may still deliver a version from before the
// eviction; the workload must stay marked as evicting, or a preemptor
// would pick yet another victim, until its quota is released.
func TestEvictingOutlivesStaleVersions(t *testing.T) {
	c := New()
	c.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("a").ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8").Obj()).Obj())
	running := utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "8").AdmittedIn("a", "h100").Obj()
	c.AddOrUpdateWorkload(running)
	c.MarkEvicting("ns/w")
	evicting := func() bool {
		for _, info := range c.Snapshot().ClusterQueues["a"].Workloads() {
			return info.Evicting
		}
		return false
	}
	c.AddOrUpdateWorkload(running.DeepCopy())
	if !evicting() {
		t.Error("a stale version of the workload cleared its evicting mark")
	}
	if cq := c.DeleteWorkload("ns/w"); cq != "a" {
		t.Errorf("DeleteWorkload = %q, want a", cq)
	}
	c.AddOrUpdateWorkload(running.DeepCopy())
	if evicting() {
		t.Error("a workload admitted again after its quota was released is still marked evicting")
	}
}

// TestAssumedSince: a pending version the scheduler admitted from, or an
// older one, is outdated; a newer one (the workload was requeued after the
// admission, its reconcile seeing only the latest version) is not.
func TestAssumedSince(t *testing.T) {
	c := New()
	c.AddOrUpdateClusterQueue(gpu("a", "8"))
	pending := func(rv string) *berthv1alpha1.Workload {
		w := utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "8").Obj()
		w.ResourceVersion = rv
		return w
	}
	info := workload.NewInfo(pending("10"))
	info.ClusterQueue = "a"
	if err := c.AssumeWorkload(info); err != nil {
		t.Fatal(err)
	}
	written := utiltesting.MakeWorkload("w", "ns").Request(1, "nvidia.com/gpu", "8").AdmittedIn("a", "h100").Obj()
	written.ResourceVersion = "12"
	c.UpdateAssumed(written)
	got := []bool{c.AssumedSince(pending("9")), c.AssumedSince(pending("12")), c.AssumedSince(pending("13"))}
	if diff := cmp.Diff([]bool{true, true, false}, got); diff != "" {
		t.Errorf("AssumedSince for versions 9, 12, 13 (-want +got):\n%s", diff)
	}
	c.AddOrUpdateWorkload(written)
	if c.AssumedSince(pending("9")) {
		t.Error("a confirmed workload is still taken as assumed")
	}
}
