// Package preemption finds the workloads to preempt so that a pending
// workload fits: a minimal set, chosen under its ClusterQueue's policies
// (withinClusterQueue, reclaimWithinCohort, borrowWithinCohort), each with
// the contract's reason.
//
// It simulates on a cache.Snapshot and leaves it as it found it; it
// evicts nothing and does no I/O: the scheduler applies its answer.
package preemption
