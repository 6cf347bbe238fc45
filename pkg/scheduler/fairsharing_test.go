package scheduler

import (
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
			e.sched.fairSharing = tc.fairSharing
			e.sched.Schedule(t.Context())
			var got []string
			for k := range e.applier.admitted {
				got = append(got, k)
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
		})
	}
}
