// Package applier writes the scheduler's decisions to the API server: an
// admission or a preemption at once, as one write of the Workload's status
// bound to the version the decision was made on (Applier), and why
// workloads wait later, paced and off the scheduler's path
// (PendingWriter).
//
// It decides nothing: the decisions come from pkg/engine/scheduler, the
// transitions they write from pkg/engine/workload.
package applier
