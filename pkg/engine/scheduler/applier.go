package scheduler

import (
	"context"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Applier writes the scheduler's decisions. Admit and Preempt may be
// called from several goroutines at once (see WithParallelism); SetPending
// is called from the cycle, one call at a time. An error from Admit makes the scheduler forget the
// assumed quota and retry the workload; an error from Preempt leaves the
// victim running, and the preemptor tries again next cycle.
type Applier interface {
	// Admit reserves quota for wl with the given admission. It returns
	// the workload as written.
	Admit(ctx context.Context, wl *berthv1alpha1.Workload, admission *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error)
	// Preempt evicts victim; reason is one of InClusterQueue,
	// InCohortReclamation, InCohortReclaimWhileBorrowing.
	Preempt(ctx context.Context, victim *berthv1alpha1.Workload, reason, message string) error
	// SetPending records why wl waits, with reason Pending or
	// Inadmissible. It is called each time the scheduler considers wl and
	// leaves it pending, and must not block the cycle: implementations
	// write later, and skip unchanged writes.
	SetPending(wl *berthv1alpha1.Workload, reason, message string)
}
