package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestBorrowingAndReclaim(t *testing.T) {
	e := newEnv(t)
	h100 := e.flavor("h100")
	cohort := fmt.Sprintf("  cohortName: %s\n  preemption: {reclaimWithinCohort: Any}\n", e.name("cohort"))
	lender := e.queue("lender", cohort, gpuQuota{flavor: h100, gpus: "8"})
	borrower := e.queue("borrower", cohort, gpuQuota{flavor: h100, gpus: "8"})
	e.localQueue("lend", lender)
	e.localQueue("borrow", borrower)

	e.job("big", "borrow", "", 2, 8, "")
	e.waitCondition("big", "Admitted", "True", "")
	eventually(t, "the borrower's status to show 8 borrowed GPUs", 30*time.Second, func(ctx context.Context) error {
		got := get(ctx, "cq", borrower, "-o", `jsonpath={.status.flavorsUsage[0].resources[?(@.name=="nvidia.com/gpu")].borrowed}`)
		if got != "8" {
			return fmt.Errorf("borrowed %q", got)
		}
		return nil
	})

	e.job("owner", "lend", "", 1, 8, "")
	e.waitCondition("big", "Preempted", "True", "InCohortReclamation")
	e.waitCondition("owner", "Admitted", "True", "")
	eventually(t, "the borrower's job suspended", 30*time.Second, func(ctx context.Context) error {
		if !e.suspended(ctx, "big") {
			return fmt.Errorf("still running")
		}
		return nil
	})
}

func TestPriorityPreemption(t *testing.T) {
	e := newEnv(t)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	cq := e.queue("prio", "  preemption: {withinClusterQueue: LowerPriority}\n", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.job("training", "main", low, 2, 4, "")
	e.waitCondition("training", "Admitted", "True", "")
	e.job("urgent", "main", high, 2, 4, "")
	// The shipped preemption.delay (5s): it first holds what completions
	// free, and says when it will evict.
	e.waitPending("urgent", "keeps the quota that running workloads free")
	e.waitCondition("training", "Preempted", "True", "InClusterQueue")
	e.waitCondition("urgent", "Admitted", "True", "")
	e.waitPending("training", "needs 8 nvidia.com/gpu")
}

func TestReprioritiseByRelabelling(t *testing.T) {
	e := newEnv(t)
	high := e.priorityClass("high", 1000)
	cq := e.queue("relabel", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.job("running", "main", "", 1, 8, "")
	e.waitCondition("running", "Admitted", "True", "")
	e.job("older", "main", "", 1, 8, "")
	e.waitPending("older", "needs 8 nvidia.com/gpu")
	e.job("newer", "main", "", 1, 8, "")
	e.waitPending("newer", "needs 8 nvidia.com/gpu")

	if _, err := kubectl(t.Context(), "", "label", "job", "newer", "-n", e.ns, "berth.dev/priority-class="+high); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the relabelled job's priority", 30*time.Second, func(ctx context.Context) error {
		if p := get(ctx, "wl", e.workload(ctx, "newer"), "-n", e.ns, "-o", "jsonpath={.spec.priority}"); p != "1000" {
			return fmt.Errorf("priority %q", p)
		}
		return nil
	})
	if _, err := kubectl(t.Context(), "", "delete", "job", "running", "-n", e.ns); err != nil {
		t.Fatal(err)
	}
	e.waitCondition("newer", "Admitted", "True", "")
	e.waitPending("older", "needs 8 nvidia.com/gpu")
}
