package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Configuration is the controller manager's configuration file. Every field
// is optional: a zero value (or an absent field) takes the default named in
// its comment, so an empty file is a working configuration.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// ClientConnection tunes the manager's connection to the API server.
	ClientConnection ClientConnection `json:"clientConnection,omitempty"`

	// LeaderElection decides which replica runs the controllers.
	LeaderElection LeaderElection `json:"leaderElection,omitempty"`

	// Health configures the liveness and readiness probe endpoint.
	Health Health `json:"health,omitempty"`

	// Metrics configures the Prometheus metrics endpoint.
	Metrics Metrics `json:"metrics,omitempty"`

	// Visibility configures the visibility API (visibility.berth.dev): the
	// pending workloads of a queue, in order, read through the API server.
	Visibility Visibility `json:"visibility,omitempty"`

	// PprofBindAddress, when set (e.g. 127.0.0.1:8082), serves Go's pprof
	// profiles there, for profiling the controller under load.
	PprofBindAddress string `json:"pprofBindAddress,omitempty"`

	// Webhook configures the admission webhook server.
	Webhook Webhook `json:"webhook,omitempty"`

	// InternalCertManagement configures the serving certificates that Berth
	// generates for its own webhooks, so that it needs no cert-manager.
	InternalCertManagement InternalCertManagement `json:"internalCertManagement,omitempty"`

	// DefaultSchedulerName is the kube-scheduler profile that admitted pods
	// are handed to when their ClusterQueue names none. Empty (the default)
	// leaves the pod template's schedulerName as the user wrote it.
	DefaultSchedulerName string `json:"defaultSchedulerName,omitempty"`

	// Integrations selects the job frameworks Berth manages.
	Integrations Integrations `json:"integrations,omitempty"`

	// ManageJobsWithoutQueueName makes Berth hold jobs that carry no
	// berth.dev/queue-name label, so that nothing runs around the quota.
	// Default false: such jobs run as if Berth were not installed.
	ManageJobsWithoutQueueName bool `json:"manageJobsWithoutQueueName,omitempty"`

	// ManagedJobsNamespaceSelector selects the namespaces whose jobs without
	// the berth.dev/queue-name label Berth takes: there such a job goes to
	// the namespace's LocalQueue named "default" when one exists (the label
	// is written at creation), and is held with ManageJobsWithoutQueueName
	// otherwise. Labelled Jobs and JobSets are Berth's in every namespace;
	// plain pods, Deployments, StatefulSets and LeaderWorkerSets only in
	// these (or in integrations.podOptions.namespaceSelector, when set).
	// Default: every namespace but kube-system and berth-system. The
	// webhooks' namespaceSelector for unlabelled jobs must select the same
	// namespaces.
	ManagedJobsNamespaceSelector *metav1.LabelSelector `json:"managedJobsNamespaceSelector,omitempty"`

	// WaitForPodsReady evicts and requeues an admitted workload whose pods
	// are not all ready in time, or stop being ready for too long, so that
	// a job that cannot run gives its quota back; with BlockAdmission,
	// admission waits for the pods of earlier workloads to be ready.
	WaitForPodsReady WaitForPodsReady `json:"waitForPodsReady,omitempty"`

	// Preemption tunes how admission makes room by evicting.
	Preemption Preemption `json:"preemption,omitempty"`

	// MultiCluster configures the dispatch of workloads to worker
	// clusters by the admission checks of berth.dev/multicluster.
	MultiCluster MultiCluster `json:"multiCluster,omitempty"`

	// NodeFailures evicts admitted workloads whose pods ran on a node that
	// failed, so that no gang runs in part.
	NodeFailures NodeFailures `json:"nodeFailures,omitempty"`

	// ObjectRetentionPolicies delete the objects that are done, so that a
	// busy cluster does not keep every Workload it ever ran.
	ObjectRetentionPolicies ObjectRetentionPolicies `json:"objectRetentionPolicies,omitempty"`

	// FairSharing evens out what the queues of a cohort borrow, by the
	// weights of ClusterQueues and Cohorts.
	FairSharing *FairSharing `json:"fairSharing,omitempty"`

	// AdmissionFairSharing turns admission fair sharing on for the
	// ClusterQueues whose admissionScope asks for it: their pending
	// workloads go by their LocalQueue's recent usage, lowest first.
	AdmissionFairSharing *AdmissionFairSharing `json:"admissionFairSharing,omitempty"`
}

// MultiCluster configures dispatch to worker clusters.
type MultiCluster struct {
	// Origin is the value of the berth.dev/multicluster-origin label on the
	// copies this manager makes in worker clusters: it finds its own
	// copies by it, so managers that share a worker need different ones.
	// A label value. Default "berth".
	Origin string `json:"origin,omitempty"`

	// WorkerLostTimeout is how long a worker cluster may be unreachable
	// before the workloads dispatched to it are requeued in the manager
	// and dispatched elsewhere; their copies there are deleted when it
	// returns. Default 15m.
	WorkerLostTimeout *metav1.Duration `json:"workerLostTimeout,omitempty"`
}

// NodeFailures says what happens to an admitted workload when a node that
// runs some of its pods fails: its Ready condition is not True, or it is
// deleted. After GracePeriod, unless the node is ready again, the whole
// workload is evicted (reason NodeFailures, with an event naming the node)
// and requeued: its job is stopped everywhere and admitted again as a
// whole, rather than run on with some pods lost. Pods still bound to a
// node that is not ready keep their quota until they are gone, because a
// node that only lost contact may still run them.
type NodeFailures struct {
	// Enable turns it on. Default true.
	Enable *bool `json:"enable,omitempty"`

	// GracePeriod is how long a node may be failed before the workloads
	// that run on it are evicted, so that a node that recovers at once
	// costs nothing. Default 1m.
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`
}

// ObjectRetentionPolicies say how long objects that are done are kept.
type ObjectRetentionPolicies struct {
	// Workloads is how long finished and deactivated Workloads are kept.
	Workloads WorkloadRetentionPolicy `json:"workloads,omitempty"`
}

// WorkloadRetentionPolicy is how long Workloads that are done are kept.
// Unset keeps them until their job is deleted.
type WorkloadRetentionPolicy struct {
	// AfterFinished deletes a finished Workload this long after its
	// Finished condition turned True; its job is left as it is (a finished
	// job gets no new Workload). 0s deletes it at once. Unset: kept.
	AfterFinished *metav1.Duration `json:"afterFinished,omitempty"`

	// AfterDeactivatedByBerth deletes a Workload that Berth deactivated
	// (requeued more often than waitForPodsReady's backoffLimitCount
	// allows, past its maximum execution time, or rejected by an admission
	// check) this long after it was, together with its job: the job's
	// controller owner, deleted in the background, which takes its pods
	// and whatever else it owns. A Workload a person deactivated is kept.
	// Unset: kept.
	AfterDeactivatedByBerth *metav1.Duration `json:"afterDeactivatedByBerth,omitempty"`
}

// AdmissionFairSharing is how the recent usage of LocalQueues is counted.
type AdmissionFairSharing struct {
	// UsageHalfLifeTime is how long it takes a past sample of a queue's
	// usage to weigh half as much. 0 counts only the latest sample.
	// Default 168h (a week).
	UsageHalfLifeTime *metav1.Duration `json:"usageHalfLifeTime,omitempty"`

	// UsageSamplingInterval is how often the usage is sampled and the
	// queues' statuses updated. Default 5m.
	UsageSamplingInterval *metav1.Duration `json:"usageSamplingInterval,omitempty"`

	// ResourceWeights weigh each resource's part in a queue's usage. Usage
	// is counted as a fraction of the ClusterQueue's nominal quota of the
	// resource, so resources of different units compare; a resource of
	// weight 0 does not count. Default 1 for every resource.
	ResourceWeights map[corev1.ResourceName]float64 `json:"resourceWeights,omitempty"`
}

// Preemption tunes how admission makes room by evicting.
type Preemption struct {
	// Delay is how long a workload that fits only by preempting waits
	// before it evicts anything. Meanwhile the quota that running
	// workloads free as they finish is kept for it (no lower priority
	// takes it, no other queue borrows it); if enough is freed, it is
	// admitted and nothing is evicted, otherwise it evicts what is still
	// missing when the delay is over. Its waiting message gives that time.
	// Every eviction throws away the victim's work since its last
	// checkpoint; the delay costs the preemptor at most its length, which
	// is short beside the victims' own termination grace period. 0 evicts
	// at once, as Kueue does. Default 5s.
	Delay *metav1.Duration `json:"delay,omitempty"`
}

// FairSharing turns fair sharing on.
type FairSharing struct {
	// Enable orders the borrowing workloads of a cohort by the share their
	// queue would have once they are admitted, lowest first, lets a queue
	// whose reclaimWithinCohort allows it preempt to borrow where the
	// shares allow (see PreemptionStrategies), and reports each
	// ClusterQueue's share in its status. Default false.
	Enable bool `json:"enable,omitempty"`

	// PreemptionStrategies are the rules, tried in order, by which a
	// workload that would borrow may preempt a workload of another queue
	// that borrows: LessThanOrEqualToFinalShare (its queue's share with it
	// at most the other queue's without the victim) and
	// LessThanInitialShare (its queue's share with it below the other
	// queue's now). Default both, in that order.
	PreemptionStrategies []PreemptionStrategy `json:"preemptionStrategies,omitempty"`
}

// PreemptionStrategy is a rule of fair-sharing preemption.
type PreemptionStrategy string

// The preemption strategies of fair sharing.
const (
	LessThanOrEqualToFinalShare PreemptionStrategy = "LessThanOrEqualToFinalShare"
	LessThanInitialShare        PreemptionStrategy = "LessThanInitialShare"
)

// ClientConnection tunes the client's rate limit towards the API server.
type ClientConnection struct {
	// QPS is the sustained number of requests per second to the API
	// server. Default 500: the API server protects itself with API priority
	// and fairness, so the client's own limit must not be the bottleneck.
	QPS float32 `json:"qps,omitempty"`

	// Burst is the number of requests the client may send at once above
	// QPS. Default 1000.
	Burst int32 `json:"burst,omitempty"`
}

// LeaderElection decides which replica runs the controllers. Every replica
// serves webhooks.
type LeaderElection struct {
	// LeaderElect turns leader election on. Default true; turn it off only
	// when a single replica runs.
	LeaderElect *bool `json:"leaderElect,omitempty"`

	// ResourceName is the name of the Lease the replicas compete for.
	// Default "berth.dev".
	ResourceName string `json:"resourceName,omitempty"`

	// ResourceNamespace is the namespace of that Lease. Default
	// "berth-system".
	ResourceNamespace string `json:"resourceNamespace,omitempty"`

	// LeaseDuration is how long the Lease holds after its leader last
	// renewed it: when a leader dies without giving it up, no workload is
	// admitted for up to this long. Shorter fails over sooner, at the cost
	// of more renewals. Default 15s.
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`

	// RenewDeadline is how long the leader keeps trying to renew the
	// Lease before it stops leading (and exits). Must be shorter than
	// LeaseDuration. Default 10s.
	RenewDeadline *metav1.Duration `json:"renewDeadline,omitempty"`

	// RetryPeriod is how often the leader renews the Lease, and how often
	// the other replicas try to take it. Default 2s.
	RetryPeriod *metav1.Duration `json:"retryPeriod,omitempty"`
}

// Health configures the probe endpoint.
type Health struct {
	// HealthProbeBindAddress is the host:port that serves /healthz and
	// /readyz. Default ":8081"; "0" turns the endpoint off.
	HealthProbeBindAddress string `json:"healthProbeBindAddress,omitempty"`
}

// Visibility configures the server of the visibility API, which the API
// server reaches through the APIService v1alpha1.visibility.berth.dev and
// the Service ServiceName, in the namespace of the webhook Service.
type Visibility struct {
	// BindAddress is the host:port the visibility API listens on, over
	// HTTPS with the certificate of internalCertManagement, to the API
	// server's front proxy only. Default ":8444"; "0" turns it off.
	BindAddress string `json:"bindAddress,omitempty"`

	// ServiceName is the Service, with no selector, that the APIService
	// names; the leader writes its EndpointSlice with its own address, so
	// that only the replica whose queues are the scheduler's is called.
	// Default "berth-visibility".
	ServiceName string `json:"serviceName,omitempty"`

	// AdvertiseAddress is the leader's address in that EndpointSlice.
	// Default: the first address of the machine that is neither loopback
	// nor link-local (in a pod, its IP).
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
}

// Metrics configures the metrics endpoint.
type Metrics struct {
	// BindAddress is the host:port that serves /metrics. Default ":8443"
	// (":8080" when SecureServing is false); "0" turns the endpoint off.
	BindAddress string `json:"bindAddress,omitempty"`

	// SecureServing serves /metrics over HTTPS, to clients the API server
	// authenticates (TokenReview) and authorizes for get on the
	// non-resource URL /metrics (SubjectAccessReview; the ClusterRole
	// berth-metrics-reader grants it). Default true. The certificate is
	// self-signed unless CertDir holds one.
	SecureServing *bool `json:"secureServing,omitempty"`

	// CertDir holds the metrics server's tls.crt and tls.key (from
	// cert-manager, say); empty for a self-signed certificate made at
	// start.
	CertDir string `json:"certDir,omitempty"`

	// EnableLocalQueueMetrics publishes the series per LocalQueue
	// (berth_local_queue_resource_usage and the like): about 25 per
	// LocalQueue, so a cluster with thousands of namespaces may want them
	// off. Default true.
	EnableLocalQueueMetrics *bool `json:"enableLocalQueueMetrics,omitempty"`

	// CustomLabels are labels added to every series of a ClusterQueue or
	// a LocalQueue, their values copied from the queue's own labels, so
	// that usage can be charged back by team, say. A queue without the
	// label has the value "". At most 8.
	// +listType=map
	// +listMapKey=name
	CustomLabels []MetricLabel `json:"customLabels,omitempty"`
}

// MetricLabel is a label of the metrics whose value a queue's label gives.
type MetricLabel struct {
	// Name is the metrics' label: a Prometheus label name, other than the
	// labels Berth's series already have.
	Name string `json:"name"`

	// SourceLabelKey is the key of the ClusterQueue's or LocalQueue's
	// label that holds the value. Default: Name.
	SourceLabelKey string `json:"sourceLabelKey,omitempty"`
}

// Webhook configures the admission webhook server.
type Webhook struct {
	// Port is the port the webhook server listens on. Default 9443.
	Port int32 `json:"port,omitempty"`

	// Host is the address the webhook server listens on. Default "": all
	// interfaces.
	Host string `json:"host,omitempty"`

	// CertDir is the directory that holds tls.crt and tls.key. With
	// internal certificate management on, Berth writes them there. Default
	// "/tmp/berth-webhook-certs".
	CertDir string `json:"certDir,omitempty"`
}

// InternalCertManagement configures the serving certificates that Berth
// generates, signs with its own CA and rotates, and the webhook
// configurations it writes that CA into.
type InternalCertManagement struct {
	// Enable turns internal certificate management on. Default true; turn
	// it off when another tool (e.g. cert-manager) provides the
	// certificates in CertDir and the CA bundles.
	Enable *bool `json:"enable,omitempty"`

	// WebhookServiceName is the Service in front of the webhook server; the
	// certificate's DNS names derive from it. Default
	// "berth-webhook-service".
	WebhookServiceName string `json:"webhookServiceName,omitempty"`

	// WebhookServiceNamespace is that Service's namespace, also where the
	// certificate Secret lives. Default "berth-system".
	WebhookServiceNamespace string `json:"webhookServiceNamespace,omitempty"`

	// WebhookSecretName is the Secret that holds the CA and the serving
	// certificate, so that replicas and restarts share one CA. Default
	// "berth-webhook-server-cert".
	WebhookSecretName string `json:"webhookSecretName,omitempty"`

	// ExtraIPs are IP addresses added to the certificate's subject
	// alternative names, e.g. 127.0.0.1 for a controller that runs outside
	// the cluster and is reached by URL.
	ExtraIPs []string `json:"extraIPs,omitempty"`

	// ValidatingWebhookConfigurationName is the configuration whose
	// webhooks get the CA bundle. Default
	// "berth-validating-webhook-configuration".
	ValidatingWebhookConfigurationName string `json:"validatingWebhookConfigurationName,omitempty"`

	// MutatingWebhookConfigurationName is the configuration whose webhooks
	// get the CA bundle. Default "berth-mutating-webhook-configuration".
	MutatingWebhookConfigurationName string `json:"mutatingWebhookConfigurationName,omitempty"`
}

// Integrations selects the job frameworks Berth manages.
type Integrations struct {
	// Frameworks are the job kinds Berth manages, among FrameworkBatchJob,
	// FrameworkJobSet, FrameworkPod, FrameworkDeployment, FrameworkStatefulSet,
	// FrameworkLeaderWorkerSet (the last three need FrameworkPod),
	// FrameworkRayJob, FrameworkRayCluster and FrameworkTrainJob. Absent
	// means all of them but the last three, whose CRDs come with KubeRay and
	// Kubeflow Trainer; an empty list means none.
	Frameworks []string `json:"frameworks,omitempty"`

	// PodOptions says which plain pods Berth holds, with the pod framework.
	PodOptions *PodIntegrationOptions `json:"podOptions,omitempty"`
}

// PodIntegrationOptions says which plain pods Berth holds.
type PodIntegrationOptions struct {
	// NamespaceSelector selects the namespaces whose queued pods Berth
	// holds; pods elsewhere are never touched, label or not. Kueue's older
	// name for ManagedJobsNamespaceSelector, which it defaults to; set both
	// only to hold pods in fewer namespaces than other jobs. Neither may
	// select kube-system or berth-system, whose pods must never wait on
	// Berth (its own among them).
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// WaitForPodsReady puts a time limit on an admitted workload's pods: a
// workload whose pods are not all ready Timeout after its admission, or
// whose pods, once all ready, are not all ready again RecoveryTimeout after
// one stopped being ready, is evicted (reason PodsReadyTimeout) and queued
// again after the backoff of RequeuingStrategy. This frees the quota and the
// nodes held by a job that cannot run, for example one whose pods cannot all
// be scheduled. The Workload's PodsReady condition says which clock runs:
// reason WaitForStart before its pods were first all ready, WaitForRecovery
// after one stopped being ready.
type WaitForPodsReady struct {
	// Enable turns the timeout on. Default false.
	Enable bool `json:"enable,omitempty"`

	// Timeout is how long an admitted workload may wait for its pods to be
	// ready before it is evicted and requeued. Default 5m.
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// BlockAdmission admits no workload while the pods of any admitted
	// workload are not all ready (until they are, or its timeout evicts
	// it), so that the pods of two gangs cannot each hold half the nodes:
	// use it when
	// pods go to a scheduler that places them one at a time. Berth's own
	// scheduler profile places a gang's pods together, and without it
	// admission does not wait. Waiting workloads say which workload they
	// wait for. Default false (Kueue defaults it to true).
	BlockAdmission *bool `json:"blockAdmission,omitempty"`

	// RecoveryTimeout is how long a running workload whose pods were all
	// ready may have pods that are not (a pod restarted, its node failed)
	// before it is evicted and requeued. Unset: no limit.
	RecoveryTimeout *metav1.Duration `json:"recoveryTimeout,omitempty"`

	// RequeuingStrategy is where a workload evicted for a timeout goes back
	// in its queue, how long it waits before it is queued again, and how
	// often it may be.
	RequeuingStrategy RequeuingStrategy `json:"requeuingStrategy,omitempty"`
}

// RequeuingTimestamp is the time that places a requeued workload in its
// queue.
type RequeuingTimestamp string

// The timestamps of RequeuingStrategy.
const (
	// EvictionTimestamp places it by the time of its eviction, behind the
	// workloads of its priority that waited while it ran.
	EvictionTimestamp RequeuingTimestamp = "Eviction"
	// CreationTimestamp places it by the time its Workload was created,
	// ahead of those created after it.
	CreationTimestamp RequeuingTimestamp = "Creation"
)

// RequeuingStrategy backs off a workload that keeps being evicted because
// its pods are not ready in time: it waits backoffBaseSeconds after its
// first such eviction, twice as long after each further one, at most
// backoffMaxSeconds, with up to a tenth added so that workloads evicted
// together do not return together. After backoffLimitCount requeues it is
// deactivated (spec.active false) with a message saying so.
type RequeuingStrategy struct {
	// Timestamp places a workload evicted for a pods-ready timeout back in
	// its queue: Eviction (by when it was evicted) or Creation (by when it
	// was created). Workloads evicted for other reasons (preemption, say)
	// always go back by their eviction. Default Eviction.
	Timestamp *RequeuingTimestamp `json:"timestamp,omitempty"`

	// BackoffBaseSeconds is the first wait. Default 60.
	BackoffBaseSeconds *int32 `json:"backoffBaseSeconds,omitempty"`

	// BackoffMaxSeconds is the longest wait. Default 3600.
	BackoffMaxSeconds *int32 `json:"backoffMaxSeconds,omitempty"`

	// BackoffLimitCount is how many requeues are allowed before the
	// workload is deactivated. Unset: no limit.
	BackoffLimitCount *int32 `json:"backoffLimitCount,omitempty"`
}
