package cache

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestLent(t *testing.T) {
	fr := resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}
	admitted := func(name, cq, gpus string) *berthv1alpha1.Workload {
		return utiltesting.MakeWorkload(name, "ns").Request(1, "nvidia.com/gpu", gpus).AdmittedIn(cq, "h100").Obj()
	}
	gpus := func(nominal string, limits ...string) berthv1alpha1.FlavorQuotas {
		return utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", nominal, limits...).Obj()
	}
	cases := map[string]struct {
		queues    []*berthv1alpha1.ClusterQueue
		cohorts   []*berthv1alpha1.Cohort
		workloads []*berthv1alpha1.Workload
		// wantLent is per queue in a cohort; 0 where it lends nothing.
		wantLent map[berthv1alpha1.ClusterQueueReference]int64
	}{
		"nothing borrowed": {
			queues:    []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "c"), withCohort(gpu("b", "8"), "c"), gpu("alone", "8")},
			workloads: []*berthv1alpha1.Workload{admitted("w", "a", "8")},
			wantLent:  map[berthv1alpha1.ClusterQueueReference]int64{"a": 0, "b": 0},
		},
		"a sibling borrows": {
			queues:    []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "c"), withCohort(gpu("b", "8"), "c")},
			workloads: []*berthv1alpha1.Workload{admitted("w", "a", "11")},
			wantLent:  map[berthv1alpha1.ClusterQueueReference]int64{"a": 0, "b": 3},
		},
		"lenders in name order, each within its lending limit and its unused quota": {
			queues: []*berthv1alpha1.ClusterQueue{
				withCohort(gpu("a", "8", "", "2"), "c"), withCohort(gpu("b", "8"), "c"), withCohort(gpu("c", "8"), "c"), withCohort(gpu("d", "8"), "c"),
			},
			workloads: []*berthv1alpha1.Workload{admitted("w", "b", "6"), admitted("x", "d", "13")},
			wantLent:  map[berthv1alpha1.ClusterQueueReference]int64{"a": 2, "b": 2, "c": 1, "d": 0},
		},
		"the cohort's own quota is taken first": {
			queues:    []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "c"), withCohort(gpu("b", "8"), "c")},
			cohorts:   []*berthv1alpha1.Cohort{utiltesting.MakeCohort("c").ResourceGroup(gpus("4")).Obj()},
			workloads: []*berthv1alpha1.Workload{admitted("w", "a", "14")},
			wantLent:  map[berthv1alpha1.ClusterQueueReference]int64{"a": 0, "b": 2},
		},
		"a cohort's parent lends what a queue in another cohort leaves unused": {
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "left"), withCohort(gpu("b", "8"), "right")},
			cohorts: []*berthv1alpha1.Cohort{
				utiltesting.MakeCohort("left").Parent("root").Obj(),
				utiltesting.MakeCohort("right").Parent("root").Obj(),
			},
			workloads: []*berthv1alpha1.Workload{admitted("w", "b", "13")},
			wantLent:  map[berthv1alpha1.ClusterQueueReference]int64{"a": 5, "b": 0},
		},
		"a cohort's lending limit keeps the rest for its own queues": {
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "left"), withCohort(gpu("b", "8"), "right")},
			cohorts: []*berthv1alpha1.Cohort{
				utiltesting.MakeCohort("left").Parent("root").ResourceGroup(gpus("0", "", "3")).Obj(),
				utiltesting.MakeCohort("right").Parent("root").Obj(),
			},
			workloads: []*berthv1alpha1.Workload{admitted("w", "b", "11")},
			wantLent:  map[berthv1alpha1.ClusterQueueReference]int64{"a": 3, "b": 0},
		},
		"the parent's own quota, then a sibling in the borrower's cohort, then the other cohort": {
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "8"), "left"), withCohort(gpu("b", "8"), "right"), withCohort(gpu("c", "8"), "right")},
			cohorts: []*berthv1alpha1.Cohort{
				utiltesting.MakeCohort("left").Parent("root").Obj(),
				utiltesting.MakeCohort("right").Parent("root").Obj(),
				utiltesting.MakeCohort("root").ResourceGroup(gpus("2")).Obj(),
			},
			workloads: []*berthv1alpha1.Workload{admitted("w", "b", "20"), admitted("x", "c", "4")},
			wantLent:  map[berthv1alpha1.ClusterQueueReference]int64{"a": 6, "b": 0, "c": 4},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := map[berthv1alpha1.ClusterQueueReference]int64{}
			for name, u := range newTestCache(tc.queues, tc.cohorts, tc.workloads...).Snapshot().Lent() {
				got[name] = u[fr]
			}
			if diff := cmp.Diff(tc.wantLent, got); diff != "" {
				t.Errorf("lent (-want +got):\n%s", diff)
			}
		})
	}
}
