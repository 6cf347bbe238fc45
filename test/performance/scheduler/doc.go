// Package scheduler is Berth's admission benchmark: the scenario of
// Kueue's scheduler performance test, run against a real kube-apiserver
// and etcd with the Berth controller manager as a separate process. This
// package holds no code; it is the map of the harness in its subpackages:
//
//   - scenario: a config (configs/*.yaml) describes cohorts of
//     ClusterQueues and, per ClusterQueue, sets of workloads created at a
//     fixed interval. The generator expands it into objects and a creation
//     schedule, and computes the bounds the scenario puts on any run.
//   - measure: the readings taken from outside the processes: their
//     metrics, their CPU and memory from /proc, their profiles, and the
//     calibration of the API server's write rate before a run.
//   - audit: the Workload watch and the quota audit it feeds.
//   - runner: a run end to end. It creates the objects over the API; its
//     recorder takes in the watch's events, records every admission and
//     marks each admitted workload Finished runtimeMs after its admission
//     was observed, as a job integration would when the job ends; it
//     restarts the controller when asked to, and writes the summary, which
//     perf check holds against the targets.
//
// The imports go one way: runner uses audit, measure and scenario; audit
// and measure use scenario; scenario uses only Berth's API types.
//
// Times, all taken on the runner's monotonic clock:
//   - start: just before the first Workload is created.
//   - creation of a workload: just before its create request is sent.
//   - admission: when the watch event with Admitted=True arrives.
//   - finish: when the write setting Finished=True returned.
//   - wallMs: from start to the last finish. A run cut short (--timeout or
//     an interrupt) still writes its summary, with unfinished > 0 and
//     wallMs the time until it stopped: wallMs and ratio are then only
//     lower bounds, and perf check fails.
//   - time to admission: from creation to the admission that the workload
//     finished after (a preempted workload is timed to its last admission).
//
// Two lower bounds come with every run, so that wallMs reads as a ratio:
// scenarioBoundMs, what the scenario allows with unlimited API speed
// (per cohort, the later of the last creation plus its runtime and the
// cohort's work divided by its capacity; see scenario.Bound), and
// apiBoundMs, the three writes per workload (create, admit, finish) at
// the API server's write rate measured on this machine by a calibration
// phase before the run. The calibration measures ConfigMap writes
// (apiWritesPerSecond, which apiBoundMs and lowerBoundMs use) and then
// Workload writes, the create, admission and Finished condition of each
// workload as in the scenario (workloadWritesPerSecond, giving
// workloadApiBoundMs): the writes a queueing system must actually make,
// several times dearer for the API server than ConfigMap ones, so a
// tighter bound; workloadRatio is wallMs against it (or the scenario
// bound, if larger), and floorRatio that bound over lowerBoundMs: no run
// on this machine can have a lower ratio. From the Workload writes the
// API server stored in the run and the CPU it and etcd spent meanwhile,
// cpuBoundMs estimates the time the necessary writes take on all the
// machine's cores at the run's own cost per write, the watches it served
// included. perf check names a ratio target either of them puts out of
// the machine's reach. The summary also reports what the API server, etcd
// and the runner itself (which plays users and jobs) cost in CPU. Next to
// the summary, workloads.csv has every workload's times and samples.csv
// the run's progress and each process's cores every 5 s.
//
// Every run also audits the quota (audit.Report): replayed in the order
// the API server stored them, the Workload versions the watch showed must
// never leave a ClusterQueue or cohort holding more than its quota. With
// runner.Options.RestartEvery the runner kills the controller (SIGKILL) at
// that interval and starts it again, to show that restarts lose no
// workload and never admit beyond quota. A controller that exits on its
// own (a leader whose lease renewals the API server did not answer in
// time) is started again as its kubelet would, and counted in
// controller.exits.
//
// The pure parts (scenario, the audit, the summary and targets, the
// recorder against a fake client) are unit tested; a run needs the
// envtest binaries in bin/k8s and a controller binary, and is driven by
// cmd/perf and hack/perf.sh, and at 2% scale by test/integration/perf.
// RESULTS.md keeps the history of the runs taken on the development
// machine. No package of the harness may import Berth's controller
// packages (pkg/controller, pkg/controllermanager, pkg/applier, pkg/fastwatch,
// pkg/engine/scheduler, pkg/engine/cache, pkg/engine/queue): the controller is measured as a
// black box. They may use pkg/engine/workload's pure helpers and
// pkg/workloadwriter, to write a Workload's status as Berth's job
// integrations do; imports_test.go holds them to that.
package scheduler
