package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

var (
	mkCQ = utiltesting.MakeClusterQueue
	mkFQ = utiltesting.MakeFlavorQuotas
	mkWL = utiltesting.MakeWorkload
)

func gpuCQ(name, cohort string, quotas ...berthv1alpha1.FlavorQuotas) *utiltesting.ClusterQueueWrapper {
	return mkCQ(name).Cohort(cohort).ResourceGroup(quotas...)
}

func gpus(flavor, nominal string, limits ...string) berthv1alpha1.FlavorQuotas {
	return mkFQ(flavor).Resource("nvidia.com/gpu", nominal, limits...).Obj()
}

func TestSchedule(t *testing.T) {
	lowerPriority := berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority}
	reclaimAny := berthv1alpha1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny}
	threshold := int32(5)
	borrowLower := berthv1alpha1.ClusterQueuePreemption{
		ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyLowerPriority,
		BorrowWithinCohort:  berthv1alpha1.BorrowWithinCohort{Policy: berthv1alpha1.PreemptionPolicyLowerPriority, MaxPriorityThreshold: &threshold},
	}
	cases := map[string]struct {
		in            envInputs
		wantAdmitted  map[string]string
		wantPreempted map[string]string
		wantPending   map[string]string
	}{
		"admits all that fit in one cycle": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "8")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj(), mkWL("b", "ns").Queue("q").Request(2, "nvidia.com/gpu", "2").Obj(), mkWL("c", "ns").Queue("q").Request(1, "nvidia.com/gpu", "1").Obj()},
			},
			wantAdmitted: map[string]string{"ns/a": "q: main=1 nvidia.com/gpu:h100", "ns/b": "q: main=2 nvidia.com/gpu:h100"},
			wantPending:  map[string]string{"ns/c": "Pending: The workload does not fit: podset main: flavor h100: needs 1 nvidia.com/gpu, 0 available (nominal 8, in use 8)"},
		},
		"whenCanBorrow MayStopSearch takes the borrowing flavor": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "c", gpus("h100", "2"), gpus("a100", "8")).Obj(), gpuCQ("lender", "c", gpus("h100", "8")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantAdmitted: map[string]string{"ns/a": "q: main=1 nvidia.com/gpu:h100"},
		},
		"whenCanBorrow TryNextFlavor prefers a flavor without borrowing": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{
					gpuCQ("q", "c", gpus("h100", "2"), gpus("a100", "8")).Fungibility(berthv1alpha1.FlavorFungibility{WhenCanBorrow: berthv1alpha1.TryNextFlavor}).Obj(),
					gpuCQ("lender", "c", gpus("h100", "8")).Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantAdmitted: map[string]string{"ns/a": "q: main=1 nvidia.com/gpu:a100"},
		},
		"whenCanPreempt TryNextFlavor uses a later flavor that fits": {
			in: envInputs{
				queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4"), gpus("a100", "4")).Preemption(lowerPriority).Obj()},
				admitted: []*berthv1alpha1.Workload{mkWL("low", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj()},
				pending:  []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantAdmitted: map[string]string{"ns/a": "q: main=1 nvidia.com/gpu:a100"},
		},
		"whenCanPreempt MayStopSearch preempts in the first flavor": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4"), gpus("a100", "4")).Preemption(lowerPriority).
					Fungibility(berthv1alpha1.FlavorFungibility{WhenCanPreempt: berthv1alpha1.MayStopSearch}).Obj()},
				admitted: []*berthv1alpha1.Workload{mkWL("low", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj()},
				pending:  []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantPreempted: map[string]string{"ns/low": berthv1alpha1.ReasonInClusterQueue},
			wantPending:   map[string]string{"ns/a": "Pending: Preempting 1 workloads to make room"},
		},
		"untolerated taint skips the flavor and is named": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("tainted", "8")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "1").Obj()},
			},
			wantPending: map[string]string{"ns/a": "Pending: The workload does not fit: podset main: flavor tainted: untolerated taint dedicated=ml:NoSchedule"},
		},
		"tolerated taint": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("tainted", "8")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").PodSets(*utiltesting.MakePodSet("main", 1).Request("nvidia.com/gpu", "1").
					Toleration(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml"}).Obj()).Obj()},
			},
			wantAdmitted: map[string]string{"ns/a": "q: main=1 nvidia.com/gpu:tainted"},
		},
		"partial admission takes the largest count that fits": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "7")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").PodSets(*utiltesting.MakePodSet("main", 10).MinCount(2).Request("nvidia.com/gpu", "1").Obj()).Obj()},
			},
			wantAdmitted: map[string]string{"ns/a": "q: main=7 nvidia.com/gpu:h100"},
		},
		"StrictFIFO head blocks its queue": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Strategy(berthv1alpha1.StrictFIFO).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("big", "ns").Queue("q").Priority(1).Request(1, "nvidia.com/gpu", "8").Obj(), mkWL("small", "ns").Queue("q").Request(1, "nvidia.com/gpu", "1").Obj()},
			},
			wantPending: map[string]string{"ns/big": "Pending: The workload does not fit: podset main: flavor h100: needs 8 nvidia.com/gpu, 4 available (nominal 4, in use 0)"},
		},
		"BestEffortFIFO sets the head aside and tries the next": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("big", "ns").Queue("q").Priority(1).Request(1, "nvidia.com/gpu", "8").Obj(), mkWL("small", "ns").Queue("q").Request(1, "nvidia.com/gpu", "1").Obj()},
			},
			wantAdmitted: map[string]string{"ns/small": "q: main=1 nvidia.com/gpu:h100"},
			wantPending:  map[string]string{"ns/big": "Pending: The workload does not fit: podset main: flavor h100: needs 8 nvidia.com/gpu, 4 available (nominal 4, in use 0)"},
		},
		"non-borrowing workload goes before a borrowing one of higher priority": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "4")).Obj(), gpuCQ("b", "c", gpus("h100", "4")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("borrower", "ns").Queue("a").Priority(100).Request(1, "nvidia.com/gpu", "6").Obj(), mkWL("owner", "ns").Queue("b").Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantAdmitted: map[string]string{"ns/owner": "b: main=1 nvidia.com/gpu:h100"},
			wantPending:  map[string]string{"ns/borrower": "Pending: The workload does not fit: podset main: flavor h100: needs 6 nvidia.com/gpu, 4 available (nominal 4, in use 0, cohort can lend 4)"},
		},
		"message names the borrowing limit": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "8", "0")).Obj(), gpuCQ("b", "c", gpus("h100", "8")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("w", "ns").Queue("a").Request(1, "nvidia.com/gpu", "16").Obj()},
			},
			wantPending: map[string]string{"ns/w": "Pending: The workload does not fit: podset main: flavor h100: needs 16 nvidia.com/gpu, 8 available (nominal 8, in use 0, cohort can lend 16, borrowingLimit 0)"},
		},
		"inactive queue": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("b200", "8")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "1").Obj()},
			},
			wantPending: map[string]string{"ns/a": "Inadmissible: ClusterQueue q is inactive: ResourceFlavor b200 not found"},
		},
		"stopped queue": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "8")).StopPolicy(berthv1alpha1.Hold).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "1").Obj()},
			},
			wantPending: map[string]string{"ns/a": "Inadmissible: ClusterQueue q is stopped (stopPolicy Hold)"},
		},
		"resource no flavor covers": {
			in: envInputs{
				queues:  []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "8")).Obj()},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Request(1, "nvidia.com/gpu", "1", "cpu", "2").Obj()},
			},
			wantPending: map[string]string{"ns/a": "Pending: The workload does not fit: podset main: resource cpu is not covered by any flavor of the ClusterQueue"},
		},
		"reclaim lent quota": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "4")).Preemption(reclaimAny).Obj(), gpuCQ("b", "c", gpus("h100", "4")).Obj()},
				admitted: []*berthv1alpha1.Workload{
					mkWL("b1", "ns").Priority(50).Request(1, "nvidia.com/gpu", "4").AdmittedIn("b", "h100").Obj(),
					mkWL("b2", "ns").Priority(50).Request(1, "nvidia.com/gpu", "4").AdmittedIn("b", "h100").Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("a1", "ns").Queue("a").Request(1, "nvidia.com/gpu", "2").Obj()},
			},
			wantPreempted: map[string]string{"ns/b1": berthv1alpha1.ReasonInCohortReclamation},
			wantPending:   map[string]string{"ns/a1": "Pending: Preempting 1 workloads to make room"},
		},
		"reclaim takes what a queue borrows, not what it owns": {
			// by is the most recently admitted, but taking it would leave
			// b below its nominal quota, and b would reclaim in turn.
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "2")).Preemption(reclaimAny).Obj(), gpuCQ("b", "c", gpus("h100", "2")).Obj()},
				admitted: []*berthv1alpha1.Workload{
					mkWL("bx", "ns").Request(1, "nvidia.com/gpu", "1").AdmittedIn("b", "h100").Obj(),
					mkWL("by", "ns").Request(1, "nvidia.com/gpu", "2").AdmittedIn("b", "h100").
						Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, time.Minute).Obj(),
					mkWL("az", "ns").Request(1, "nvidia.com/gpu", "1").AdmittedIn("a", "h100").Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("a1", "ns").Queue("a").Request(1, "nvidia.com/gpu", "1").Obj()},
			},
			wantPreempted: map[string]string{"ns/bx": berthv1alpha1.ReasonInCohortReclamation},
			wantPending:   map[string]string{"ns/a1": "Pending: Preempting 1 workloads to make room"},
		},
		"no reclaim from a queue within its nominal quota": {
			in: envInputs{
				queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "4")).Preemption(reclaimAny).Obj(), gpuCQ("b", "c", gpus("h100", "4")).Obj()},
				admitted: []*berthv1alpha1.Workload{mkWL("b1", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("b", "h100").Obj(), mkWL("a0", "ns").Request(1, "nvidia.com/gpu", "3").AdmittedIn("a", "h100").Obj()},
				pending:  []*berthv1alpha1.Workload{mkWL("a1", "ns").Queue("a").Request(1, "nvidia.com/gpu", "2").Obj()},
			},
			wantPending: map[string]string{"ns/a1": "Pending: The workload does not fit, and no workload may be preempted to make room: podset main: flavor h100: needs 2 nvidia.com/gpu, 1 available (nominal 4, in use 3, cohort can lend 1)"},
		},
		"borrow within cohort up to the threshold": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "2")).Preemption(borrowLower).Obj(), gpuCQ("b", "c", gpus("h100", "0")).Obj(), gpuCQ("d", "c", gpus("h100", "6")).Obj()},
				admitted: []*berthv1alpha1.Workload{
					mkWL("b-high", "ns").Priority(8).Request(1, "nvidia.com/gpu", "4").AdmittedIn("b", "h100").Obj(),
					mkWL("b-low", "ns").Priority(4).Request(1, "nvidia.com/gpu", "4").AdmittedIn("b", "h100").Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("a1", "ns").Queue("a").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantPreempted: map[string]string{"ns/b-low": berthv1alpha1.ReasonInCohortReclaimWhileBorrowing},
			wantPending:   map[string]string{"ns/a1": "Pending: Preempting 1 workloads to make room"},
		},
		"a borrowing preemptor leaves other queues their nominal quota": {
			// b borrows 3 GPUs from d; the only set of victims that frees 4
			// includes b-big, and would leave b below its nominal quota, whose
			// own work could reclaim it back from a's borrower at once.
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "3")).Preemption(borrowLower).Obj(), gpuCQ("b", "c", gpus("h100", "4")).Obj(), gpuCQ("d", "c", gpus("h100", "0")).Obj()},
				admitted: []*berthv1alpha1.Workload{
					mkWL("b-big", "ns").Priority(2).Request(1, "nvidia.com/gpu", "4").AdmittedIn("b", "h100").Obj(),
					mkWL("b-two", "ns").Priority(2).Request(1, "nvidia.com/gpu", "2").AdmittedIn("b", "h100").Obj(),
					mkWL("b-one", "ns").Priority(2).Request(1, "nvidia.com/gpu", "1").AdmittedIn("b", "h100").Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("a1", "ns").Queue("a").Priority(3).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantPending: map[string]string{"ns/a1": "Pending: The workload does not fit, and no workload may be preempted to make room: podset main: flavor h100: needs 4 nvidia.com/gpu, 0 available (nominal 3, in use 0, cohort can lend 0)"},
		},
		"a workload does not preempt in its own queue so as to borrow": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("q", "c", gpus("h100", "4")).Preemption(lowerPriority).Obj(), gpuCQ("lender", "c", gpus("h100", "2")).Obj()},
				admitted: []*berthv1alpha1.Workload{
					mkWL("low", "ns").Request(1, "nvidia.com/gpu", "2").AdmittedIn("q", "h100").Obj(),
					mkWL("keep", "ns").Priority(10).Request(1, "nvidia.com/gpu", "2").AdmittedIn("q", "h100").Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("p", "ns").Queue("q").Priority(5).Request(1, "nvidia.com/gpu", "3").Obj()},
			},
			wantPending: map[string]string{"ns/p": "Pending: The workload does not fit, and no workload may be preempted to make room: podset main: flavor h100: needs 3 nvidia.com/gpu, 2 available (nominal 4, in use 4, cohort can lend 2)"},
		},
		"whenCanPreempt MayStopSearch keeps an earlier flavor that borrows": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{
					gpuCQ("q", "c", gpus("h100", "2"), gpus("a100", "4")).Preemption(lowerPriority).
						Fungibility(berthv1alpha1.FlavorFungibility{WhenCanBorrow: berthv1alpha1.TryNextFlavor, WhenCanPreempt: berthv1alpha1.MayStopSearch}).Obj(),
					gpuCQ("lender", "c", gpus("h100", "8")).Obj(),
				},
				admitted: []*berthv1alpha1.Workload{mkWL("low", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "a100").Obj()},
				pending:  []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantAdmitted: map[string]string{"ns/a": "q: main=1 nvidia.com/gpu:h100"},
		},
		"minimal set of victims": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "6")).Preemption(lowerPriority).Obj()},
				admitted: []*berthv1alpha1.Workload{
					mkWL("small", "ns").Priority(1).Request(1, "nvidia.com/gpu", "2").AdmittedIn("q", "h100").Obj(),
					mkWL("big", "ns").Priority(2).Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantPreempted: map[string]string{"ns/big": berthv1alpha1.ReasonInClusterQueue},
			wantPending:   map[string]string{"ns/a": "Pending: Preempting 1 workloads to make room"},
		},
		"equal priority is not preempted under LowerPriority": {
			in: envInputs{
				queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Preemption(lowerPriority).Obj()},
				admitted: []*berthv1alpha1.Workload{mkWL("old", "ns").Priority(10).Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj()},
				pending:  []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantPending: map[string]string{"ns/a": "Pending: The workload does not fit, and no workload may be preempted to make room: podset main: flavor h100: needs 4 nvidia.com/gpu, 0 available (nominal 4, in use 4)"},
		},
		"LowerOrNewerEqualPriority preempts a newer equal": {
			in: envInputs{
				queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Preemption(berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerOrNewerEqualPriority}).Obj()},
				admitted: []*berthv1alpha1.Workload{mkWL("newer", "ns").Created(time.Hour).Priority(10).Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Obj()},
				pending:  []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantPreempted: map[string]string{"ns/newer": berthv1alpha1.ReasonInClusterQueue},
			wantPending:   map[string]string{"ns/a": "Pending: Preempting 1 workloads to make room"},
		},
		"waits for a victim already being evicted": {
			in: envInputs{
				queues: []*berthv1alpha1.ClusterQueue{gpuCQ("q", "", gpus("h100", "4")).Preemption(lowerPriority).Obj()},
				admitted: []*berthv1alpha1.Workload{
					mkWL("going", "ns").Request(1, "nvidia.com/gpu", "4").AdmittedIn("q", "h100").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 0).Obj(),
					mkWL("other", "ns").Request(1, "nvidia.com/gpu", "0").AdmittedIn("q", "h100").Obj(),
				},
				pending: []*berthv1alpha1.Workload{mkWL("a", "ns").Queue("q").Priority(10).Request(1, "nvidia.com/gpu", "4").Obj()},
			},
			wantPending: map[string]string{"ns/a": "Pending: Waiting for 1 preempted workloads to release their quota"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.flavors = gpuFlavors()
			e := newEnv(tc.in)
			e.sched.Schedule(context.Background())
			got := map[string]string{}
			for k, adm := range e.applier.admitted {
				got[k] = flavorsOf(adm)
			}
			if diff := cmp.Diff(tc.wantAdmitted, got, cmpEmpty); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPreempted, e.applier.preempted, cmpEmpty); diff != "" {
				t.Errorf("preempted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPending, e.applier.pending, cmpEmpty); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpEmpty makes a nil map equal an empty one.
var cmpEmpty = cmp.FilterValues(func(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())
