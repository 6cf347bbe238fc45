package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestBarsLent checks what each queue's bar shows as lent: the engine's
// quota tree (cache.Snapshot.Lent) on the ClusterQueues' status, through
// parent Cohorts too.
func TestBarsLent(t *testing.T) {
	// queue is a ClusterQueue in cohort with 8 H100 GPUs (lendingLimit
	// when not ""), using used of them.
	queue := func(name, cohort, used, lendingLimit string) *berthv1alpha1.ClusterQueue {
		cq := utiltesting.MakeClusterQueue(name).Cohort(cohort).ResourceGroup(
			utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8", "", lendingLimit).Obj()).Obj()
		total := resource.MustParse(used)
		borrowed := total.DeepCopy()
		borrowed.Sub(resource.MustParse("8"))
		if borrowed.Sign() < 0 {
			borrowed = resource.Quantity{}
		}
		cq.Status.FlavorsUsage = []berthv1alpha1.FlavorUsage{{Name: "h100", Resources: []berthv1alpha1.ResourceUsage{{Name: "nvidia.com/gpu", Total: total, Borrowed: borrowed}}}}
		return cq
	}
	cases := map[string]struct {
		queues   []*berthv1alpha1.ClusterQueue
		cohorts  []berthv1alpha1.Cohort
		wantLent map[string]string
	}{
		"a queue of the same cohort borrows": {
			queues:   []*berthv1alpha1.ClusterQueue{queue("team-a", "research", "10", ""), queue("team-b", "research", "0", "")},
			wantLent: map[string]string{"team-a": "0", "team-b": "2"},
		},
		"a Cohort's parent lends a queue of another cohort's unused quota": {
			queues: []*berthv1alpha1.ClusterQueue{queue("team-a", "research", "11", ""), queue("team-b", "serving", "5", "")},
			cohorts: []berthv1alpha1.Cohort{
				*utiltesting.MakeCohort("research").Parent("org").Obj(),
				*utiltesting.MakeCohort("serving").Parent("org").Obj(),
			},
			wantLent: map[string]string{"team-a": "0", "team-b": "3"},
		},
		"the lending limit caps what is lent": {
			queues:   []*berthv1alpha1.ClusterQueue{queue("team-a", "research", "10", ""), queue("team-b", "research", "0", "1"), queue("team-c", "research", "0", "")},
			wantLent: map[string]string{"team-a": "0", "team-b": "1", "team-c": "1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cl := &Cluster{ClusterQueues: map[string]*berthv1alpha1.ClusterQueue{}, Cohorts: tc.cohorts}
			for _, cq := range tc.queues {
				cl.ClusterQueues[cq.Name] = cq
			}
			lent := cl.lent()
			got := map[string]string{}
			for name, cq := range cl.ClusterQueues {
				for _, b := range bars(cq, lent) {
					got[name] = b.Lent
				}
			}
			if diff := cmp.Diff(tc.wantLent, got); diff != "" {
				t.Errorf("lent (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueuePageOfANamespaceReader: a reader who may not read ClusterQueues
// (berth-batch-user) sees, on the page of the ClusterQueue its LocalQueue
// submits to, its own workloads numbered in the LocalQueue, without the
// queue's quota; a ClusterQueue none of its LocalQueues names stays
// unknown.
func TestQueuePageOfANamespaceReader(t *testing.T) {
	cl := &Cluster{
		QueuesUnknown: true, Now: utiltesting.BaseTime,
		LocalQueues: map[string]*berthv1alpha1.LocalQueue{"team-c/main": utiltesting.MakeLocalQueue("main", "team-c", "gpu")},
	}
	for i, name := range []string{"first", "second"} {
		wl := utiltesting.MakeWorkload(name, "team-c").Queue("main").Request(1, "cpu", "1").Obj()
		wl.CreationTimestamp.Time = utiltesting.BaseTime.Add(time.Duration(i) * time.Second)
		cl.Workloads = append(cl.Workloads, wl)
	}
	p := buildQueuePage(cl, "gpu", 1, nil)
	var got []string
	for _, w := range p.Pending {
		got = append(got, fmt.Sprintf("%d %s", w.Position, w.Name))
	}
	if !p.Known || !p.OwnOnly || len(p.Bars) != 0 || !cmp.Equal(got, []string{"1 first", "2 second"}) {
		t.Errorf("known %v, own only %v, bars %v, pending %v; want known, own only, no bars, first then second", p.Known, p.OwnOnly, p.Bars, got)
	}
	if other := buildQueuePage(cl, "cpu", 1, nil); other.Known {
		t.Error("a ClusterQueue no LocalQueue read submits to is shown")
	}
}
