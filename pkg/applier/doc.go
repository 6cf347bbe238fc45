// Package applier writes the scheduler's decisions to the API server: an
// admission or a preemption at once, as one write of the Workload's status
// bound to the version the decision was made on (Applier), and why
// workloads wait later, paced and off the scheduler's path (WaitReasons).
//
// Three names meet here, one per layer. pkg/engine/scheduler's Applier is
// what the scheduler asks of the world (admit, preempt, say why one waits);
// this package's Applier is the one implementation of it; both write
// through a workloadwriter.Writer, the single way any part of Berth writes a
// Workload's status.
//
// It decides nothing: the decisions come from pkg/engine/scheduler, the
// transitions they write from pkg/engine/workload.
package applier
