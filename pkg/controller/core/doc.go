// Package core holds the reconcilers of Berth's own kinds. They feed the
// admission engine's cache (pkg/cache) and queues (pkg/queue) from the
// informers, write the queues' status, and apply the engine's decisions to
// Workloads through Applier.
//
// It must not decide admission: every decision comes from pkg/scheduler.
// Predicates and event handlers here only filter and map keys.
package core
