// Package workloadwriter writes a Workload's status to the API server:
// Apply takes one of pkg/engine/workload's transitions, applies it to a copy of the
// Workload and writes the copy's status, bound to the resourceVersion it was
// computed from. The reconcilers, the scheduler's applier, the job
// integrations and the benchmark all write through a Writer they are given.
// Requeue also deactivates a workload past its backoff's limit, the one
// write of its spec here.
//
// Production writes are PUTs of the status subresource answered with the
// object's metadata alone (NewPut); NewUpdate writes through any
// controller-runtime client, the fake client of unit tests among them.
//
// It decides nothing: which transition to apply, and when, is the caller's.
package workloadwriter
