package scheduler

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// reclaimEnv is a cohort where queue b (nominal 0) borrows all 4 GPUs of
// queue a with four 1-GPU workloads, and wants a fifth; a reclaims.
func reclaimEnv(pendingInA ...*berthv1alpha1.Workload) *env {
	reclaimAny := berthv1alpha1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny}
	var admitted []*berthv1alpha1.Workload
	for i := range 4 {
		admitted = append(admitted, mkWL(fmt.Sprintf("b%d", i), "ns").Request(1, "nvidia.com/gpu", "1").AdmittedIn("b", "h100").Obj())
	}
	return newEnv(envInputs{
		flavors:  gpuFlavors(),
		queues:   []*berthv1alpha1.ClusterQueue{gpuCQ("a", "c", gpus("h100", "4")).Preemption(reclaimAny).Obj(), gpuCQ("b", "c", gpus("h100", "0")).Obj()},
		admitted: admitted,
		pending:  append(pendingInA, mkWL("b4", "ns").Queue("b").Request(1, "nvidia.com/gpu", "1").Obj()),
	})
}

func (e *env) victims() []string {
	var keys []string
	for k := range e.applier.preempted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// release plays a victim's eviction being written and seen.
func (e *env) release(key string) {
	e.cache.DeleteWorkload(key)
	e.queues.QueueInadmissible("b")
}

// TestPreemptorKeepsWhatItsVictimsRelease: the quota the first victim
// releases stays with the preemptor rather than go to a borrower, which the
// preemptor would only reclaim again.
func TestPreemptorKeepsWhatItsVictimsRelease(t *testing.T) {
	e := reclaimEnv(mkWL("p", "ns").Queue("a").Request(1, "nvidia.com/gpu", "2").Obj())
	ctx := context.Background()
	got := []Stats{e.sched.Schedule(ctx)}
	victims := e.victims()
	if len(victims) != 2 {
		t.Fatalf("victims = %v, want 2", victims)
	}
	e.release(victims[0])
	got = append(got, e.sched.Schedule(ctx))
	if msg := e.applier.pending["ns/b4"]; !strings.Contains(msg, "cohort can lend 0") {
		t.Errorf("b4 pending message = %q, want the reserved GPU not lent", msg)
	}
	e.release(victims[1])
	got = append(got, e.sched.Schedule(ctx))
	// b4 is not tried on the third cycle: nothing since the second freed
	// quota for it, and the preemptor's admission takes what was free.
	want := []Stats{{Preempted: 2, Pending: 2}, {Pending: 2}, {Admitted: 1, Pending: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats per cycle (-want +got):\n%s", diff)
	}
	if _, ok := e.applier.admitted["ns/p"]; !ok {
		t.Error("the preemptor was not admitted once its victims were gone")
	}
	if _, ok := e.applier.admitted["ns/b4"]; ok {
		t.Error("b4 borrowed the quota reclaimed for the preemptor")
	}
	if len(e.applier.preempted) != 2 {
		t.Errorf("preempted %v, want only the first two victims", e.victims())
	}
}

// TestNominationGivenUpWhenTheNomineeLeaves: a preemptor deleted while it
// waits gives back what it reserved.
func TestNominationGivenUpWhenTheNomineeLeaves(t *testing.T) {
	e := reclaimEnv(mkWL("p", "ns").Queue("a").Request(1, "nvidia.com/gpu", "2").Obj())
	ctx := context.Background()
	e.sched.Schedule(ctx)
	e.queues.DeleteWorkload("ns/p")
	for _, v := range e.victims() {
		e.release(v)
	}
	if st := e.sched.Schedule(ctx); st.Admitted != 1 {
		t.Errorf("stats = %+v, want b4 admitted into the quota p no longer waits for", st)
	}
	if len(e.sched.nominated) != 0 {
		t.Errorf("nominations left: %v", e.sched.nominated)
	}
}

// TestOnePreemptorPerQueueAndCycle: of two heads of a queue that would
// both reclaim, only the first preempts; the second waits behind it.
func TestOnePreemptorPerQueueAndCycle(t *testing.T) {
	e := reclaimEnv(
		mkWL("high", "ns").Queue("a").Priority(10).Request(1, "nvidia.com/gpu", "2").Obj(),
		mkWL("low", "ns").Queue("a").Priority(0).Request(1, "nvidia.com/gpu", "2").Obj(),
	)
	st := e.sched.Schedule(context.Background())
	if diff := cmp.Diff(Stats{Preempted: 2, Pending: 3}, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	want := "workload ns/high, ahead of it in the ClusterQueue, is making room first"
	if msg := e.applier.pending["ns/low"]; !strings.Contains(msg, want) {
		t.Errorf("low's message = %q, want it to contain %q", msg, want)
	}
}

// TestNomineeKeepsTheRoomFromOtherQueues: a preemptor that borrows, and
// evicted a borrower of another queue for it, gets the room, not a
// borrower of a third queue of higher priority that could not make room
// itself. Were it handed over, the victim would have been evicted for
// nothing, and the preemptor would evict again.
func TestNomineeKeepsTheRoomFromOtherQueues(t *testing.T) {
	borrowLower := berthv1alpha1.ClusterQueuePreemption{
		ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyLowerPriority,
		BorrowWithinCohort:  berthv1alpha1.BorrowWithinCohort{Policy: berthv1alpha1.PreemptionPolicyLowerPriority},
	}
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		// 6 GPUs, all in use; l lends its 2.
		queues: []*berthv1alpha1.ClusterQueue{
			gpuCQ("a", "c", gpus("h100", "2")).Preemption(borrowLower).Obj(),
			gpuCQ("b", "c", gpus("h100", "0")).Obj(),
			gpuCQ("o", "c", gpus("h100", "2")).Obj(),
			gpuCQ("l", "c", gpus("h100", "2")).Obj(),
		},
		admitted: []*berthv1alpha1.Workload{
			mkWL("keep", "ns").Priority(10).Request(1, "nvidia.com/gpu", "2").AdmittedIn("a", "h100").Obj(),
			mkWL("bw", "ns").Request(1, "nvidia.com/gpu", "2").AdmittedIn("b", "h100").Obj(),
			mkWL("y", "ns").Priority(10).Request(1, "nvidia.com/gpu", "2").AdmittedIn("o", "h100").Obj(),
		},
		// Both would borrow; h has the higher priority but may not preempt.
		pending: []*berthv1alpha1.Workload{
			mkWL("p", "ns").Queue("a").Priority(3).Request(1, "nvidia.com/gpu", "2").Obj(),
			mkWL("h", "ns").Queue("o").Priority(5).Request(1, "nvidia.com/gpu", "2").Obj(),
		},
	})
	ctx := context.Background()
	e.sched.Schedule(ctx)
	if diff := cmp.Diff([]string{"ns/bw"}, e.victims()); diff != "" {
		t.Fatalf("victims (-want +got):\n%s", diff)
	}
	e.cache.DeleteWorkload("ns/bw")
	e.queues.QueueInadmissible("b")
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/p"]; !ok {
		t.Errorf("the preemptor was not admitted into the room its victim left; pending: %v", e.applier.pending)
	}
	if _, ok := e.applier.admitted["ns/h"]; ok {
		t.Error("h, of another queue, took the room p's victim left")
	}
}

// TestGivenUpNominationWakesItsTree: a head set aside because a
// nomination held quota back is tried again when the nominee is admitted
// elsewhere and gives the reservation up.
func TestGivenUpNominationWakesItsTree(t *testing.T) {
	e := reclaimEnv(mkWL("p", "ns").Queue("a").Request(1, "nvidia.com/gpu", "2").Obj())
	ctx := context.Background()
	e.sched.Schedule(ctx)
	victims := e.victims()
	e.release(victims[0])
	// p now holds the GPU its first victim released; b4 is set aside.
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/b4"]; ok {
		t.Fatal("b4 took the GPU held for p")
	}
	// p is deleted: its hold is given up when its queue is next looked at.
	e.queues.DeleteWorkload("ns/p")
	e.sched.Schedule(ctx)
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/b4"]; !ok {
		t.Errorf("b4 still waits after the hold was given up: %q", e.applier.pending["ns/b4"])
	}
}
