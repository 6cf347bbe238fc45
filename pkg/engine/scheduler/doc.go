// Package scheduler runs admission cycles: it takes a snapshot of the
// quota cache, pops the heads of the queues round after round, assigns
// flavors, preempts when a queue's policy allows, and hands every decision
// to an Applier. Decisions read only the snapshot, so a cycle decides as
// many workloads as fit with the same result as admitting them one at a
// time in the cycle's order.
//
// Order within a round of heads: workloads that fit without borrowing
// before those that borrow, then higher priority, then earlier queue time,
// then key. A borrowing workload therefore never takes quota that a
// non-borrowing head of the same round needs. Heads of different cohort
// trees do not share quota, so one global order is also the per-cohort one.
//
// The package does no API I/O and must not import an API client: writes
// are the Applier's, implemented by the controllers.
package scheduler
