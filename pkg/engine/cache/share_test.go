package cache

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func weighted(cq *berthv1alpha1.ClusterQueue, w string) *berthv1alpha1.ClusterQueue {
	cq.Spec.FairSharing = &berthv1alpha1.FairSharing{Weight: new(resource.MustParse(w))}
	return cq
}

func TestWeightedShare(t *testing.T) {
	cases := map[string]struct {
		queues  []*berthv1alpha1.ClusterQueue
		cohorts []*berthv1alpha1.Cohort
		// use is GPUs admitted per queue.
		use  map[string]string
		want map[berthv1alpha1.ClusterQueueReference]int64
	}{
		"a borrower's share is what it borrows of what the cohort has": {
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "4"), "c"), withCohort(gpu("b", "4"), "c")},
			use:    map[string]string{"a": "6"},
			want:   map[berthv1alpha1.ClusterQueueReference]int64{"a": 250, "b": 0},
		},
		"a weight of 2 halves the share": {
			queues: []*berthv1alpha1.ClusterQueue{weighted(withCohort(gpu("a", "4"), "c"), "2"), withCohort(gpu("b", "4"), "c")},
			use:    map[string]string{"a": "6", "b": "2"},
			want:   map[berthv1alpha1.ClusterQueueReference]int64{"a": 125, "b": 0},
		},
		"a weight of 0 borrows at an endless share, and keeps its nominal quota at none": {
			queues: []*berthv1alpha1.ClusterQueue{weighted(withCohort(gpu("a", "4"), "c"), "0"), weighted(withCohort(gpu("b", "4"), "c"), "0")},
			use:    map[string]string{"a": "5", "b": "3"},
			want:   map[berthv1alpha1.ClusterQueueReference]int64{"a": math.MaxInt64, "b": 0},
		},
		"a queue without a cohort shares nothing": {
			queues: []*berthv1alpha1.ClusterQueue{gpu("a", "4")},
			use:    map[string]string{"a": "4"},
			want:   map[berthv1alpha1.ClusterQueueReference]int64{"a": 0},
		},
		"hierarchical: what a cohort may borrow from above counts": {
			// root holds 4 of its own and d lends 4; team (a 4, b 4) could
			// hold its 8 and those 8: 16. a uses 10, 6 above its quota: 6
			// of 16.
			queues: []*berthv1alpha1.ClusterQueue{withCohort(gpu("a", "4"), "team"), withCohort(gpu("b", "4"), "team"), withCohort(gpu("d", "4"), "root")},
			cohorts: []*berthv1alpha1.Cohort{
				utiltesting.MakeCohort("team").Parent("root").Obj(),
				utiltesting.MakeCohort("root").ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "4").Obj()).Obj(),
			},
			use:  map[string]string{"a": "10"},
			want: map[berthv1alpha1.ClusterQueueReference]int64{"a": 375, "b": 0, "d": 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newTestCache(tc.queues, tc.cohorts)
			for q, gpus := range tc.use {
				c.AddOrUpdateWorkload(utiltesting.MakeWorkload("w-"+q, "ns").Request(1, "nvidia.com/gpu", gpus).AdmittedIn(q, "h100").Obj())
			}
			got := map[berthv1alpha1.ClusterQueueReference]int64{}
			for name, cq := range c.Snapshot().ClusterQueues {
				got[name] = cq.WeightedShare()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("weighted shares (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFairLessComparesWherePathsPart(t *testing.T) {
	c := New()
	c.AddOrUpdateResourceFlavor(utiltesting.MakeResourceFlavor("h100"))
	for _, q := range []*berthv1alpha1.ClusterQueue{
		withCohort(gpu("a", "4"), "team"), withCohort(gpu("b", "4"), "team"), weighted(withCohort(gpu("d", "4"), "root"), "2"),
	} {
		c.AddOrUpdateClusterQueue(q)
	}
	c.AddOrUpdateCohort(utiltesting.MakeCohort("team").Parent("root").Obj())
	s := c.Snapshot()
	fr := resources.FlavorResource{Flavor: "h100", Resource: "nvidia.com/gpu"}
	six := resources.Usage{fr: 6}
	a, b, d := s.ClusterQueues["a"].SharesWith(six), s.ClusterQueues["b"].SharesWith(resources.Usage{fr: 5}), s.ClusterQueues["d"].SharesWith(six)
	aBig := s.ClusterQueues["a"].SharesWith(resources.Usage{fr: 10})
	if less, decided := FairLess(b, a); !decided || !less {
		t.Errorf("b borrowing 1 before a borrowing 2 in their cohort: less %v, decided %v", less, decided)
	}
	// Under root, with a at 10 team (weight 1) would borrow 2 of 12, d
	// (weight 2) 2 of 12: d's share is half of team's. With a at 6, team
	// borrows nothing from root: its share is 0, below d's.
	if less, decided := FairLess(d, aBig); !decided || !less {
		t.Errorf("d of weight 2 before team of weight 1: less %v, decided %v", less, decided)
	}
	if less, decided := FairLess(a, d); !decided || !less {
		t.Errorf("team borrowing nothing from root before d: less %v, decided %v", less, decided)
	}
	if _, decided := FairLess(a, a); decided {
		t.Error("a path against itself decided")
	}
}
