// Package runner runs the benchmark end to end (Run) and judges its
// result (Check). A run starts a kube-apiserver and etcd through envtest,
// calibrates them, creates the scenario's queues, starts the controller
// binary as a process of its own and creates the Workloads on schedule. Its
// recorder plays the job integration: fed by the audit's watch, it records
// every admission and eviction and marks each admitted Workload Finished
// its runtime after the admission was seen, at most Options.Finishers
// writes at once. While the scenario plays, the runner samples every
// process's CPU every 5 s and, with Options.RestartEvery, kills and
// restarts the controller, adding up what each of its processes did. The
// result is a Summary (summary.json) with workloads.csv and samples.csv,
// and Check holds a summary against its scenario's targets (TargetsFor).
//
// It owns the order of a run and what its figures mean; the readings
// themselves come from measure, the audit from audit and the objects from
// scenario. It must not reach into the controller it measures: it talks to
// it through the API server, its metrics and its process, and, like the
// rest of the harness, it must not import Berth's controller packages
// (pkg/controller, pkg/controllermanager, pkg/applier, pkg/fastwatch, pkg/engine/scheduler,
// pkg/engine/cache, pkg/engine/queue). It writes a Workload's Finished condition with
// pkg/engine/workload and pkg/workloadwriter, exactly as Berth's job integrations
// do.
package runner
