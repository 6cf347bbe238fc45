package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// AdmittedWorkloads counts admissions per ClusterQueue.
	AdmittedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_admitted_workloads_total",
		Help: "Workloads admitted, by ClusterQueue.",
	}, []string{"cluster_queue"})

	// PreemptedWorkloads counts preemptions per ClusterQueue of the victim
	// and reason (InClusterQueue, InCohortReclamation,
	// InCohortReclaimWhileBorrowing).
	PreemptedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_preempted_workloads_total",
		Help: "Workloads preempted, by the victim's ClusterQueue and the reason.",
	}, []string{"cluster_queue", "reason"})

	// EvictedWorkloads counts evictions other than preemption, by reason.
	EvictedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_evicted_workloads_total",
		Help: "Workloads evicted for reasons other than preemption, by ClusterQueue and reason.",
	}, []string{"cluster_queue", "reason"})

	// PendingWorkloads is the number of workloads waiting per ClusterQueue.
	PendingWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_pending_workloads",
		Help: "Workloads waiting for quota, by ClusterQueue.",
	}, []string{"cluster_queue"})

	// WatchesStarted counts the watches of Workloads, ClusterQueues and
	// LocalQueues the controller opened (pkg/fastwatch), by resource: one
	// each at start, and another each time one ends. The API server ends a
	// watch after 5 to 10 minutes, and early when it falls so far behind
	// that a watcher's events no longer fit its buffer; then the
	// controller's view of the cluster lags until the watch is open again.
	WatchesStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_watches_started_total",
		Help: "Watches opened, by resource; more than one per resource every five minutes means the API server closes them early.",
	}, []string{"resource"})

	// AdmittedActiveWorkloads is the number of workloads holding quota per
	// ClusterQueue.
	AdmittedActiveWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_admitted_active_workloads",
		Help: "Workloads holding quota, by ClusterQueue.",
	}, []string{"cluster_queue"})
)

func init() {
	metrics.Registry.MustRegister(AdmittedWorkloads, PreemptedWorkloads, EvictedWorkloads, PendingWorkloads, AdmittedActiveWorkloads, WatchesStarted)
}

// ClusterQueueDeleted drops the gauges of a deleted ClusterQueue.
func ClusterQueueDeleted(name string) {
	PendingWorkloads.DeleteLabelValues(name)
	AdmittedActiveWorkloads.DeleteLabelValues(name)
}
