// Package queue owns the pending workloads: one ordered heap per
// ClusterQueue, and for BestEffortFIFO queues the set of workloads set
// aside as inadmissible until an event could let them fit.
//
// Order within a queue: higher priority first, then earlier queue time
// (see workload.QueueTime), then the workload key as a stable tie-breaker.
// A queue with admission fair sharing puts first the workloads of the
// LocalQueue whose recent usage, as a fraction of the queue's nominal
// quota and divided by its weight, is lowest (usage.go): the Manager keeps
// that usage, decayed by a half-life, and charges each admission at once.
//
// The Manager is safe for concurrent use: the controllers add, update and
// delete workloads while the scheduler pops heads. It knows nothing of
// quota and makes no admission decisions; it does no I/O.
package queue
