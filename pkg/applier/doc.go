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
// An admission whose answer is lost (the connection closed after the
// request went out, a timeout) may have been stored: the Applier reads the
// Workload back from the API server, and reports the admission made when
// it is there. Otherwise the scheduler would hand the quota to another
// workload while this one runs, over quota until the watch told it.
//
// It decides nothing: the decisions come from pkg/engine/scheduler, the
// transitions they write from pkg/engine/workload.
package applier
