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

	// PendingWorkloads is the number of workloads waiting per ClusterQueue:
	// status active for those the scheduler tries, inadmissible for those
	// set aside until an event could let them fit.
	PendingWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_pending_workloads",
		Help: "Workloads waiting for quota, by ClusterQueue and status (active: tried by the scheduler; inadmissible: set aside until something changes).",
	}, []string{"cluster_queue", "status"})

	// AdmissionWaitTime is how long workloads waited, from entering their
	// queue (created, or requeued) to their admission.
	AdmissionWaitTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "berth_admission_wait_time_seconds",
		Help:    "Time from entering the queue (creation or requeue) to admission, by ClusterQueue.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16),
	}, []string{"cluster_queue"})

	// ClusterQueueResourceUsage is the quota workloads hold, borrowed
	// quota included, in the resource's unit (cores for cpu, bytes for
	// memory).
	ClusterQueueResourceUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cluster_queue_resource_usage",
		Help: "Quota in use, borrowed included, by ClusterQueue, flavor and resource (cores for cpu, bytes for memory).",
	}, []string{"cluster_queue", "flavor", "resource"})

	// ClusterQueueNominalQuota is a ClusterQueue's nominal quota.
	ClusterQueueNominalQuota = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cluster_queue_nominal_quota",
		Help: "Nominal quota, by ClusterQueue, flavor and resource (cores for cpu, bytes for memory).",
	}, []string{"cluster_queue", "flavor", "resource"})

	// AdmissionCycleDuration is how long a scheduling cycle takes.
	AdmissionCycleDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "berth_admission_cycle_duration_seconds",
		Help:    "Duration of a scheduling cycle, its writes included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})

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

	// UnaccountedResources is what running pods use beyond what their
	// ClusterQueue admitted, in the resource's unit: the quota audit
	// (pkg/auditor) counts it from the pods themselves. It is 0 for every
	// resource a ClusterQueue covers while all is well.
	UnaccountedResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_unaccounted_resources",
		Help: "What bound, running pods use beyond what their ClusterQueue admitted, by ClusterQueue and resource (cores for cpu, bytes for memory); 0 when all is well.",
	}, []string{"cluster_queue", "resource"})

	// AdmittedActiveWorkloads is the number of workloads holding quota per
	// ClusterQueue.
	AdmittedActiveWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_admitted_active_workloads",
		Help: "Workloads holding quota, by ClusterQueue.",
	}, []string{"cluster_queue"})
)

func init() {
	metrics.Registry.MustRegister(AdmittedWorkloads, PreemptedWorkloads, EvictedWorkloads, PendingWorkloads, AdmittedActiveWorkloads, WatchesStarted,
		AdmissionWaitTime, ClusterQueueResourceUsage, ClusterQueueNominalQuota, AdmissionCycleDuration, UnaccountedResources)
}

// ClusterQueueDeleted drops the series of a deleted ClusterQueue.
func ClusterQueueDeleted(name string) {
	labels := prometheus.Labels{"cluster_queue": name}
	PendingWorkloads.DeletePartialMatch(labels)
	AdmittedActiveWorkloads.DeletePartialMatch(labels)
	ClusterQueueResourceUsage.DeletePartialMatch(labels)
	ClusterQueueNominalQuota.DeletePartialMatch(labels)
}
