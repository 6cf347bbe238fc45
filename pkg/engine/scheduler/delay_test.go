package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

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
