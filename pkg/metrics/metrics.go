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

	// AdmittedActiveWorkloads is the number of workloads holding quota per
	// ClusterQueue.
	AdmittedActiveWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_admitted_active_workloads",
		Help: "Workloads holding quota, by ClusterQueue.",
	}, []string{"cluster_queue"})
)

func init() {
	metrics.Registry.MustRegister(AdmittedWorkloads, PreemptedWorkloads, EvictedWorkloads, PendingWorkloads, AdmittedActiveWorkloads)
}

// ClusterQueueDeleted drops the gauges of a deleted ClusterQueue.
func ClusterQueueDeleted(name string) {
	PendingWorkloads.DeleteLabelValues(name)
	AdmittedActiveWorkloads.DeleteLabelValues(name)
}
