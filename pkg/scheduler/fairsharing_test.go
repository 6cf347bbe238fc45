package scheduler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// TestFairSharingAdmitsTheLowerShareFirst: two queues borrow from a lender
// that has room for one more workload of either. Queue a already borrows 4
// of the cohort's 6 GPUs and its workload is first by priority; b borrows
// nothing. Fair sharing admits the one whose queue's share would be lower:
// b's (2 of 6) unless a's weight brings a's (6 of 6) below it.
func TestFairSharingAdmitsTheLowerShareFirst(t *testing.T) {
	cases := map[string]struct {
		fairSharing bool
		weightA     string
		want        string
	}{
		"without fair sharing, priority decides":          {want: "ns/wa"},
		"b's share would be lower":                        {fairSharing: true, weightA: "1", want: "ns/wb"},
		"a of weight 2 would still be above b":            {fairSharing: true, weightA: "2", want: "ns/wb"},
		"a of weight 3 would tie b: priority decides":     {fairSharing: true, weightA: "3", want: "ns/wa"},
		"a of weight 4 would be below b":                  {fairSharing: true, weightA: "4", want: "ns/wa"},
		"a of weight 0 borrows only what b does not want": {fairSharing: true, weightA: "0", want: "ns/wb"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := gpuCQ("a", "c", gpus("h100", "0"))
			if tc.weightA != "" {
				a.Weight(tc.weightA)
			}
			e := newEnv(envInputs{
				flavors:  gpuFlavors(),
				queues:   []*berthv1alpha1.ClusterQueue{a.Obj(), gpuCQ("b", "c", gpus("h100", "0")).Obj(), gpuCQ("lender", "c", gpus("h100", "6")).Obj()},
				admitted: []*berthv1alpha1.Workload{mkWL("running", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("a", "h100").Obj()},
				pending: []*berthv1alpha1.Workload{
					mkWL("wa", "ns").Queue("a").Priority(100).Request(1, "nvidia.com/gpu", "2").Obj(),
					mkWL("wb", "ns").Queue("b").Request(1, "nvidia.com/gpu", "2").Obj(),
				},
			})
			if tc.fairSharing {
				WithFairSharing()(e.sched)
			}
			e.sched.Schedule(t.Context())
			var got []string
			for k := range e.applier.admitted {
				got = append(got, k)
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if tc.fairSharing && tc.want == "ns/wb" {
				want := "with it, ClusterQueue a would borrow at a weighted share of "
				if msg := e.applier.pending["ns/wa"]; !strings.Contains(msg, want) {
					t.Errorf("a's workload says %q, want it to say %q", msg, want)
				}
			}
		})
	}
}

// TestFairSharingPreemption: queue a borrows all 4 GPUs its cohort lends,
// in two workloads; b, borrowing nothing, wants 2. With fair sharing b's
// share with its workload (2 of 4) is at most a's without one of its own
// (2 of 4): b takes one, and only one.
func TestFairSharingPreemption(t *testing.T) {
	reclaimAny := berthv1alpha1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny}
	cases := map[string]struct {
		fairSharing   bool
		weightB       string
		aWorkloads    []string
		wantPreempted int
		wantPending   string
		wantWhy       string
	}{
		"b takes one of a's two workloads": {
			fairSharing: true, aWorkloads: []string{"2", "2"}, wantPreempted: 1,
			wantPending: "Preempting 1 workloads to make room",
			wantWhy:     "to share fairly: ClusterQueue b's share with the preemptor, 500, is at most ClusterQueue a's without this workload, 500 (LessThanOrEqualToFinalShare)",
		},
		"without fair sharing, reclaimWithinCohort does not preempt to borrow": {
			aWorkloads: []string{"2", "2"}, wantPending: "The workload does not fit",
		},
		"b of weight 0 never preempts to borrow": {
			fairSharing: true, weightB: "0", aWorkloads: []string{"2", "2"}, wantPending: "The workload does not fit",
		},
		"a's one workload of 4 goes by the second strategy": {
			// S2-a fails (500 > 0), S2-b holds (500 < 1000): b takes it.
			fairSharing: true, aWorkloads: []string{"4"}, wantPreempted: 1,
			wantPending: "Preempting 1 workloads to make room",
			wantWhy:     "to share fairly: ClusterQueue b's share with the preemptor, 500, is below ClusterQueue a's, 1000 (LessThanInitialShare)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := gpuCQ("b", "c", gpus("h100", "0")).Preemption(reclaimAny)
			if tc.weightB != "" {
				b.Weight(tc.weightB)
			}
			var admitted []*berthv1alpha1.Workload
			for i, g := range tc.aWorkloads {
				admitted = append(admitted, mkWL("a"+itoa(int32(i)), "ns").Request(1, "nvidia.com/gpu", g).AdmittedIn("a", "h100").Obj())
			}
			e := newEnv(envInputs{
				flavors:  gpuFlavors(),
				queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "0")).Obj(), b.Obj(), gpuCQ("lender", "c", gpus("h100", "4")).Obj()},
				admitted: admitted,
				pending:  []*berthv1alpha1.Workload{mkWL("wb", "ns").Queue("b").Request(1, "nvidia.com/gpu", "2").Obj()},
			})
			if tc.fairSharing {
				WithFairSharing()(e.sched)
			}
			e.sched.Schedule(t.Context())
			if len(e.applier.preempted) != tc.wantPreempted {
				t.Errorf("preempted %v, want %d", e.applier.preempted, tc.wantPreempted)
			}
			for key, reason := range e.applier.preempted {
				if reason != berthv1alpha1.ReasonInCohortReclaimWhileBorrowing {
					t.Errorf("preempted for %s", reason)
				}
				if msg := e.applier.preemptMsg[key]; !strings.Contains(msg, tc.wantWhy) {
					t.Errorf("the victim's message %q, want it to say %q", msg, tc.wantWhy)
				}
			}
			if got := e.applier.pending["ns/wb"]; !strings.Contains(got, tc.wantPending) {
				t.Errorf("b's workload says %q, want %q", got, tc.wantPending)
			}
		})
	}
}
