package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// delayEnv is reclaimEnv with a preemptor in a that wants 2 of the 4 GPUs
// b borrows, a preemption delay of 5 s, and a clock the test moves.
func delayEnv() (*env, *time.Duration) {
	e := reclaimEnv(mkWL("p", "ns").Queue("a").Request(1, "nvidia.com/gpu", "2").Obj())
	var now time.Duration
	e.sched.now = func() time.Time { return utiltesting.BaseTime.Add(now) }
	e.sched.preemptionDelay = 5 * time.Second
	return e, &now
}

// TestPreemptorHoldsWhatCompletionsFree: within the delay a preemptor
// evicts nothing; the quota that finished workloads free is kept for it,
// not lent to the borrower that waits too, and once enough is free it is
// admitted without a single eviction.
func TestPreemptorHoldsWhatCompletionsFree(t *testing.T) {
	e, now := delayEnv()
	ctx := context.Background()
	e.sched.Schedule(ctx)
	if len(e.applier.preempted) != 0 {
		t.Fatalf("preempted %v at once, want none within the delay", e.victims())
	}
	deadline := utiltesting.BaseTime.Add(5 * time.Second).UTC().Format(time.RFC3339)
	if msg := e.applier.pending["ns/p"]; !strings.Contains(msg, "at "+deadline+" preempts 2 of them if not enough is free by then") {
		t.Errorf("p pending message = %q, want the deadline and the victims it would take", msg)
	}
	if got, want := e.sched.NextDeadline(), utiltesting.BaseTime.Add(5*time.Second); !got.Equal(want) {
		t.Errorf("NextDeadline() = %s, want %s", got, want)
	}
	*now = time.Second
	e.release("ns/b0")
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/b4"]; ok {
		t.Fatal("b4 borrowed the GPU a finished workload freed for the preemptor")
	}
	*now = 2 * time.Second
	e.release("ns/b1")
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/p"]; !ok {
		t.Fatalf("p was not admitted once two GPUs were free; pending: %q", e.applier.pending["ns/p"])
	}
	if len(e.applier.preempted) != 0 {
		t.Errorf("preempted %v, want none", e.victims())
	}
	if d := e.sched.NextDeadline(); !d.IsZero() {
		t.Errorf("NextDeadline() = %s after the admission, want none", d)
	}
}

// TestPreemptorEvictsTheShortfallAfterTheDelay: when the delay is over, the
// preemptor evicts only what the completions did not free.
func TestPreemptorEvictsTheShortfallAfterTheDelay(t *testing.T) {
	e, now := delayEnv()
	ctx := context.Background()
	e.sched.Schedule(ctx)
	*now = time.Second
	e.release("ns/b0")
	e.sched.Schedule(ctx)
	*now = 5 * time.Second
	e.sched.WakeHeld()
	e.sched.Schedule(ctx)
	if victims := e.victims(); len(victims) != 1 {
		t.Fatalf("preempted %v after the delay, want one: the other GPU is free already", victims)
	}
	e.release(e.victims()[0])
	e.sched.Schedule(ctx)
	if _, ok := e.applier.admitted["ns/p"]; !ok {
		t.Errorf("p was not admitted once its victim was gone; pending: %q", e.applier.pending["ns/p"])
	}
	if _, ok := e.applier.admitted["ns/b4"]; ok {
		t.Error("b4 borrowed quota held for the preemptor")
	}
}

// TestPreemptorHoldsItsPreferredFlavor: a ClusterQueue that lent its H100s
// and wants them back, with whenCanPreempt: MayStopSearch, gets H100s,
// not the A100s that are free: the delay decides when to evict, never
// where the workload runs.
func TestPreemptorHoldsItsPreferredFlavor(t *testing.T) {
	reclaimAny := berthv1alpha1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny}
	stop := berthv1alpha1.FlavorFungibility{WhenCanBorrow: berthv1alpha1.MayStopSearch, WhenCanPreempt: berthv1alpha1.MayStopSearch}
	var admitted []*berthv1alpha1.Workload
	for i := range 4 {
		admitted = append(admitted, mkWL(fmt.Sprintf("b%d", i), "ns").Request(1, "nvidia.com/gpu", "1").AdmittedIn("b", "h100").Obj())
	}
	e := newEnv(envInputs{
		flavors: gpuFlavors(),
		queues: []*berthv1alpha1.ClusterQueue{
			gpuCQ("a", "c", gpus("h100", "4"), gpus("a100", "4")).Preemption(reclaimAny).Fungibility(stop).Obj(),
			gpuCQ("b", "c", gpus("h100", "0")).Obj(),
		},
		admitted: admitted,
		pending:  []*berthv1alpha1.Workload{mkWL("p", "ns").Queue("a").Request(1, "nvidia.com/gpu", "2").Obj()},
	})
	var now time.Duration
	e.sched.now = func() time.Time { return utiltesting.BaseTime.Add(now) }
	e.sched.preemptionDelay = 5 * time.Second
	ctx := context.Background()
	e.sched.Schedule(ctx)
	if adm, ok := e.applier.admitted["ns/p"]; ok {
		t.Fatalf("p admitted within the delay in %v, want it to hold h100", adm.PodSetAssignments[0].Flavors)
	}
	now = 5 * time.Second
	e.sched.WakeHeld()
	e.sched.Schedule(ctx)
	if victims := e.victims(); len(victims) != 2 {
		t.Fatalf("preempted %v after the delay, want two of b's", victims)
	}
	for _, v := range e.victims() {
		e.release(v)
	}
	e.sched.Schedule(ctx)
	adm, ok := e.applier.admitted["ns/p"]
	if !ok {
		t.Fatalf("p not admitted once its victims were gone; pending: %q", e.applier.pending["ns/p"])
	}
	if f := adm.PodSetAssignments[0].Flavors["nvidia.com/gpu"]; f != "h100" {
		t.Errorf("p admitted in %s, want h100", f)
	}
}
