// Package controllermanager assembles Berth's controller manager: the admission
// engine (cache, queues, scheduler), the reconcilers of pkg/controller,
// the applier of the scheduler's decisions, the job integrations and the
// quota audit (pkg/auditor, with a second cache of pods: QueuedPodsCache),
// on a controller-runtime manager made with the options of this package
// (its cache, REST mapper and controller defaults).
//
// The scheduler runs on the leader only, and only once the cache holds
// every Workload the API server had when it became leader (catchup.go), so
// that its first cycle never hands out quota that admitted workloads hold.
//
// The deviations from stock controller-runtime and client-go, each with
// the measurement that justifies it, are listed in Deviations; Stock turns
// every one of them off, for bisecting an upgrade of either.
package controllermanager
