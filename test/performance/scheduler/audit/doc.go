// Package audit checks that a run never held more than its quota: every
// Workload version the runner's watch showed, kept in a Trail and
// replayed in the order the API server stored them, must leave no
// ClusterQueue above its nominal quota plus borrowing limit and no cohort
// above its capacity (Report). It also owns that watch (WatchWorkloads),
// which feeds the runner's recorder as well, and says when the watch
// listed again, after which versions may be missing and the audit stops.
//
// The audit must not see the Workloads through the code it audits: the
// watch is a stock client-go informer, not Berth's pkg/fastwatch, and
// like the rest of the harness this package must not import Berth's
// controller packages (pkg/controller, pkg/controllermanager, pkg/applier,
// pkg/fastwatch, pkg/engine/scheduler, pkg/engine/cache, pkg/engine/queue). It reads the
// Workloads' state with pkg/engine/workload's pure helpers. It writes nothing
// to the API server and keeps no clock: its caller says when each version
// was seen.
package audit
