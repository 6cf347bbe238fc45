// Package scenario is the benchmark's workload: a scenario's config (the
// YAML files in ../configs, in the shape of Kueue's scheduler performance
// generator config), its expansion into ClusterQueues and a creation
// schedule of Workloads, the objects to create for them, and the lower
// bounds the scenario puts on any run's wall time (Bound, APIBound).
//
// It is pure: apart from LoadConfig reading a file it does no I/O. It
// must not talk to an API server, start processes or know how a run is
// measured; the runner and the calibration build on it, not the other way
// round.
package scenario
