package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The series of ClusterQueues and LocalQueues carry, after the labels
// named here, the custom labels of the configuration (Configure).
var (
	// AdmittedWorkloads counts admissions per ClusterQueue.
	AdmittedWorkloads *prometheus.CounterVec

	// PreemptedWorkloads counts preemptions per ClusterQueue of the victim
	// and reason (InClusterQueue, InCohortReclamation,
	// InCohortReclaimWhileBorrowing).
	PreemptedWorkloads *prometheus.CounterVec

	// EvictedWorkloads counts evictions other than preemption, by reason.
	EvictedWorkloads *prometheus.CounterVec

	// PendingWorkloads is the number of workloads waiting per ClusterQueue:
	// status active for those the scheduler tries, inadmissible for those
	// set aside until an event could let them fit.
	PendingWorkloads *prometheus.GaugeVec

	// AdmissionWaitTime is how long workloads waited, from entering their
	// queue (created, or requeued) to their admission.
	AdmissionWaitTime *prometheus.HistogramVec

	// ClusterQueueResourceUsage is the quota workloads hold, borrowed
	// quota included, in the resource's unit (cores for cpu, bytes for
	// memory).
	ClusterQueueResourceUsage *prometheus.GaugeVec

	// ClusterQueueResourceReservation is the quota of the workloads that
	// have quota reserved and still wait on admission checks.
	ClusterQueueResourceReservation *prometheus.GaugeVec

	// ClusterQueueNominalQuota is a ClusterQueue's nominal quota.
	ClusterQueueNominalQuota *prometheus.GaugeVec

	// UnaccountedResources is what running pods use beyond what their
	// ClusterQueue admitted, in the resource's unit: the quota audit
	// (pkg/auditor) counts it from the pods themselves. It is 0 for every
	// resource a ClusterQueue covers while all is well.
	UnaccountedResources *prometheus.GaugeVec

	// AdmittedActiveWorkloads is the number of workloads holding quota per
	// ClusterQueue.
	AdmittedActiveWorkloads *prometheus.GaugeVec

	// LocalQueuePendingWorkloads is PendingWorkloads per LocalQueue.
	LocalQueuePendingWorkloads *prometheus.GaugeVec

	// LocalQueueAdmittedActiveWorkloads is AdmittedActiveWorkloads per
	// LocalQueue.
	LocalQueueAdmittedActiveWorkloads *prometheus.GaugeVec

	// LocalQueueResourceUsage is the quota a LocalQueue's workloads hold.
	LocalQueueResourceUsage *prometheus.GaugeVec

	// LocalQueueAdmissionWaitTime is AdmissionWaitTime per LocalQueue.
	LocalQueueAdmissionWaitTime *prometheus.HistogramVec
)

var (
	// CohortResourceUsage is the quota the ClusterQueues of a cohort's
	// subtree hold.
	CohortResourceUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cohort_resource_usage",
		Help: "Quota in use by the ClusterQueues of a cohort's subtree, by cohort, flavor and resource (cores for cpu, bytes for memory).",
	}, []string{"cohort", "flavor", "resource"})

	// CohortSubtreeQuota is the quota a cohort's subtree can use: its own
	// and what its members lend it.
	CohortSubtreeQuota = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cohort_subtree_quota",
		Help: "Quota of a cohort's subtree: its own nominal quota and what its members lend it, by cohort, flavor and resource (cores for cpu, bytes for memory).",
	}, []string{"cohort", "flavor", "resource"})

	// TopologyStrandedResources is the fabric's fragmentation: what the
	// nodes of a flavor with a Topology have free in domains too small for
	// the smallest gang waiting for one.
	TopologyStrandedResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_topology_stranded_resources",
		Help: "Free resources of a flavor's nodes in domains of the level the smallest waiting gang requires that have room for fewer than its pods, by flavor, level and resource (cores for cpu, bytes for memory); 0 when no gang waits for a domain.",
	}, []string{"flavor", "level", "resource"})

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
)

// waitBuckets are the buckets of the admission wait histograms: 1 s to
// about 9 hours.
var waitBuckets = prometheus.ExponentialBuckets(1, 2, 16)

// queueCollectors are the vectors that Configure makes again with the
// custom labels; the others never change.
func queueCollectors() []prometheus.Collector {
	return []prometheus.Collector{AdmittedWorkloads, PreemptedWorkloads, EvictedWorkloads, PendingWorkloads, AdmittedActiveWorkloads,
		AdmissionWaitTime, ClusterQueueResourceUsage, ClusterQueueResourceReservation, ClusterQueueNominalQuota, UnaccountedResources,
		LocalQueuePendingWorkloads, LocalQueueAdmittedActiveWorkloads, LocalQueueResourceUsage, LocalQueueAdmissionWaitTime}
}

// build makes the queue vectors with the custom label names after their
// own.
func build(custom []string) {
	with := func(labels ...string) []string { return append(labels, custom...) }
	AdmittedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_admitted_workloads_total",
		Help: "Workloads admitted, by ClusterQueue.",
	}, with("cluster_queue"))
	PreemptedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_preempted_workloads_total",
		Help: "Workloads preempted, by the victim's ClusterQueue and the reason.",
	}, with("cluster_queue", "reason"))
	EvictedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_evicted_workloads_total",
		Help: "Workloads evicted for reasons other than preemption, by ClusterQueue and reason.",
	}, with("cluster_queue", "reason"))
	PendingWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_pending_workloads",
		Help: "Workloads waiting for quota, by ClusterQueue and status (active: tried by the scheduler; inadmissible: set aside until something changes).",
	}, with("cluster_queue", "status"))
	AdmissionWaitTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "berth_admission_wait_time_seconds",
		Help:    "Time from entering the queue (creation or requeue) to admission, by ClusterQueue.",
		Buckets: waitBuckets,
	}, with("cluster_queue"))
	ClusterQueueResourceUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cluster_queue_resource_usage",
		Help: "Quota in use, borrowed included, by ClusterQueue, flavor and resource (cores for cpu, bytes for memory).",
	}, with("cluster_queue", "flavor", "resource"))
	ClusterQueueResourceReservation = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cluster_queue_resource_reservation",
		Help: "Quota reserved for workloads not admitted yet, that wait on admission checks, by ClusterQueue, flavor and resource; part of the usage.",
	}, with("cluster_queue", "flavor", "resource"))
	ClusterQueueNominalQuota = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cluster_queue_nominal_quota",
		Help: "Nominal quota, by ClusterQueue, flavor and resource (cores for cpu, bytes for memory).",
	}, with("cluster_queue", "flavor", "resource"))
	UnaccountedResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_unaccounted_resources",
		Help: "What bound, running pods use beyond what their ClusterQueue admitted, by ClusterQueue and resource (cores for cpu, bytes for memory); 0 when all is well.",
	}, with("cluster_queue", "resource"))
	AdmittedActiveWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_admitted_active_workloads",
		Help: "Workloads holding quota, by ClusterQueue.",
	}, with("cluster_queue"))
	LocalQueuePendingWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_local_queue_pending_workloads",
		Help: "Workloads waiting for quota, by LocalQueue and status (active or inadmissible, as for a ClusterQueue).",
	}, with("namespace", "local_queue", "status"))
	LocalQueueAdmittedActiveWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_local_queue_admitted_active_workloads",
		Help: "Workloads holding quota, by LocalQueue.",
	}, with("namespace", "local_queue"))
	LocalQueueResourceUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_local_queue_resource_usage",
		Help: "Quota held by a LocalQueue's workloads, by LocalQueue, flavor and resource (cores for cpu, bytes for memory).",
	}, with("namespace", "local_queue", "flavor", "resource"))
	LocalQueueAdmissionWaitTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "berth_local_queue_admission_wait_time_seconds",
		Help:    "Time from entering the queue (creation or requeue) to admission, by LocalQueue.",
		Buckets: waitBuckets,
	}, with("namespace", "local_queue"))
}

func init() {
	// Registered by Configure, once their labels are known.
	build(nil)
	metrics.Registry.MustRegister(WatchesStarted, AdmissionCycleDuration, CohortResourceUsage, CohortSubtreeQuota, TopologyStrandedResources)
}

// ClusterQueueDeleted drops the gauges of a deleted ClusterQueue. Its
// counters stay: what it admitted and evicted happened.
func ClusterQueueDeleted(name string) {
	labels.forget(labels.cq, name)
	match := prometheus.Labels{"cluster_queue": name}
	for _, v := range []*prometheus.GaugeVec{PendingWorkloads, AdmittedActiveWorkloads, ClusterQueueResourceUsage,
		ClusterQueueResourceReservation, ClusterQueueNominalQuota} {
		v.DeletePartialMatch(match)
	}
}

// relabelClusterQueue drops every series of a ClusterQueue whose custom
// label values changed: the next ones carry the new values.
func relabelClusterQueue(name string) {
	match := prometheus.Labels{"cluster_queue": name}
	for _, c := range queueCollectors() {
		if v, ok := c.(interface {
			DeletePartialMatch(prometheus.Labels) int
		}); ok {
			v.DeletePartialMatch(match)
		}
	}
}

// LocalQueueDeleted drops the series of a deleted LocalQueue.
func LocalQueueDeleted(namespace, name string) {
	labels.forget(labels.lq, namespace+"/"+name)
	dropLocalQueue(namespace, name)
}

func dropLocalQueue(namespace, name string) {
	match := prometheus.Labels{"namespace": namespace, "local_queue": name}
	LocalQueuePendingWorkloads.DeletePartialMatch(match)
	LocalQueueAdmittedActiveWorkloads.DeletePartialMatch(match)
	LocalQueueResourceUsage.DeletePartialMatch(match)
	LocalQueueAdmissionWaitTime.DeletePartialMatch(match)
}

// CohortDeleted drops the series of a cohort.
func CohortDeleted(name string) {
	match := prometheus.Labels{"cohort": name}
	CohortResourceUsage.DeletePartialMatch(match)
	CohortSubtreeQuota.DeletePartialMatch(match)
}

// Admitted records an admission in ClusterQueue cq of a workload of
// LocalQueue namespace/localQueue that waited for waited.
func Admitted(cq, namespace, localQueue string, waited time.Duration) {
	AdmittedWorkloads.WithLabelValues(CQ(cq)...).Inc()
	AdmissionWaitTime.WithLabelValues(CQ(cq)...).Observe(waited.Seconds())
	if LocalQueueMetrics() {
		LocalQueueAdmissionWaitTime.WithLabelValues(LQ(namespace, localQueue)...).Observe(waited.Seconds())
	}
}
