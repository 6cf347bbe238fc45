// Package measure takes the benchmark's readings from outside the
// processes it measures: the controller's and the API server's Prometheus
// metrics (parsed with expfmt), the CPU time and peak memory of each
// process from /proc (with procfs), their CPU and heap profiles from
// their pprof endpoints, and the calibration that times the API server's
// writes on this machine before a run.
//
// It reads; it does not decide. It must not start or stop processes,
// create the scenario's objects or know a run's phases and targets: the
// runner calls it at the moments that matter. Like the rest of the
// harness it must not import Berth's controller packages (pkg/controller,
// pkg/controllermanager, pkg/applier, pkg/fastwatch, pkg/engine/scheduler, pkg/engine/cache,
// pkg/engine/queue): the controller is measured as a black box, through its
// endpoints. The calibration writes Workloads with pkg/engine/workload and
// pkg/workloadwriter, the writes Berth's job integrations make, so that
// the bound it gives is one the run cannot beat by writing differently.
package measure
