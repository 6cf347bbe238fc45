package v1alpha1

// Labels and annotations that users put on their jobs, and that Berth puts
// on the pods of admitted jobs; Berth's scheduling gate and finalizer. The
// marker +berth:setBy says who sets each key (user, Berth, or both): the
// site's reference page of keys shows it (hack/refdocs).
const (
	// QueueNameLabel names the LocalQueue a job (a Job, JobSet, pod, pod
	// group, Deployment, StatefulSet or LeaderWorkerSet) is submitted to.
	// A job carrying it is created suspended and runs only once admitted.
	// +berth:setBy=user
	QueueNameLabel = "berth.dev/queue-name"

	// PriorityClassLabel names the WorkloadPriorityClass of a job. Changing
	// it on a queued job re-prioritises the waiting workload.
	// +berth:setBy=user
	PriorityClassLabel = "berth.dev/priority-class"

	// MaxExecTimeSecondsLabel limits how long a job may run, in seconds
	// over all its admissions: Workload.spec.maximumExecutionTimeSeconds.
	// A whole number above 0; a job with another value is refused.
	// +berth:setBy=user
	MaxExecTimeSecondsLabel = "berth.dev/max-exec-time-seconds"

	// PodSetRequiredTopologyAnnotation, on a pod template, names the level
	// (a Topology's node label, e.g. cloud.berth.dev/rack) one of whose
	// domains must hold all the podset's pods; the workload waits until one
	// has the room.
	// +berth:setBy=user
	PodSetRequiredTopologyAnnotation = "berth.dev/podset-required-topology"
	// PodSetPreferredTopologyAnnotation names the level one of whose
	// domains should hold the podset's pods; when none has the room, they
	// spread over as few domains of the wider levels as they fit in.
	// +berth:setBy=user
	PodSetPreferredTopologyAnnotation = "berth.dev/podset-preferred-topology"
	// PodSetUnconstrainedTopologyAnnotation ("true") lets the podset's pods
	// go anywhere in the fabric that has room, as few domains as possible:
	// what a podset that names no level gets.
	// +berth:setBy=user
	PodSetUnconstrainedTopologyAnnotation = "berth.dev/podset-unconstrained-topology"
	// PodSetSliceRequiredTopologyAnnotation names the level one of whose
	// domains must hold each slice of berth.dev/podset-slice-size pods.
	// +berth:setBy=user
	PodSetSliceRequiredTopologyAnnotation = "berth.dev/podset-slice-required-topology"
	// PodSetSliceSizeAnnotation is the number of pods of a slice: a whole
	// number above 0 that divides the podset's count.
	// +berth:setBy=user
	PodSetSliceSizeAnnotation = "berth.dev/podset-slice-size"

	// JobMinParallelismAnnotation allows partial admission of a Job down to
	// the given number of pods.
	// +berth:setBy=user
	JobMinParallelismAnnotation = "berth.dev/job-min-parallelism"

	// WorkloadLabel is set on the pods of an admitted job to the name of
	// its Workload.
	// +berth:setBy=Berth
	WorkloadLabel = "berth.dev/workload"
	// JobUIDLabel is set on the Workload of a job to the job's UID:
	// kubectl get wl -l berth.dev/job-uid=<uid> finds it.
	// +berth:setBy=Berth
	JobUIDLabel = "berth.dev/job-uid"

	// PodSetLabel is set on the pods of an admitted job to the name of
	// their podset.
	// +berth:setBy=Berth
	PodSetLabel = "berth.dev/podset"

	// ManagedLabel is set to "true" on the pods Berth holds or runs: those
	// of admitted jobs, and queued pods from their creation. The controller
	// watches only these.
	// +berth:setBy=Berth
	ManagedLabel = "berth.dev/managed"

	// AdmissionGate is the scheduling gate of a queued pod: Berth adds it
	// when the pod is created and removes it when the pod's Workload is
	// admitted, with the flavor's node selector and tolerations.
	// +berth:setBy=Berth
	AdmissionGate = "berth.dev/admission"

	// PodSetSizeAnnotation is set on the pods of an admitted job to the
	// number of pods admitted for their podset, so that the scheduler's
	// gang placement knows the size of a gang before all its pods exist.
	// +berth:setBy=Berth
	PodSetSizeAnnotation = "berth.dev/podset-size"

	// PodSetTopologyAssignmentAnnotation is set on the pods of an
	// admitted podset that was placed on a Topology: its admission's
	// topologyAssignment as JSON, so that berth-scheduler puts each
	// domain's count of pods in that domain and no more.
	// +berth:setBy=Berth
	PodSetTopologyAssignmentAnnotation = "berth.dev/podset-topology-assignment"

	// PodGroupNameLabel puts a queued pod in a pod group: the pods that
	// share it in a namespace are one Workload, admitted together. Berth
	// sets it on the pods of a StatefulSet (its name) and of a
	// LeaderWorkerSet (one group per leader), and on the Workload of a
	// group.
	// +berth:setBy=user,Berth
	PodGroupNameLabel = "berth.dev/pod-group-name"
	// PodGroupTotalCountAnnotation is the number of pods in a pod group:
	// its Workload is created once that many exist. Every pod of the group
	// must say the same. A StatefulSet's pods go without it: the
	// StatefulSet's replicas are their count.
	// +berth:setBy=user
	PodGroupTotalCountAnnotation = "berth.dev/pod-group-total-count"
	// PodGroupRoleAnnotation keeps the role of a pod of a group as Berth
	// read it when the pod was created (what it asks for and where it may
	// run): admission adds to its node selector and tolerations.
	// +berth:setBy=Berth
	PodGroupRoleAnnotation = "berth.dev/pod-group-role"

	// ElasticAnnotation makes a Job or a RayCluster elastic when "true":
	// once admitted, raising its parallelism or a worker group's replicas
	// queues the added pods as a slice of quota (a Workload of their own)
	// while the running pods go on, and lowering it gives the removed
	// pods' quota back once they have ended. It is read when the job is
	// created and cannot change while the job has a Workload.
	// +berth:setBy=user
	ElasticAnnotation = "berth.dev/elastic"
	// ElasticGate is the scheduling gate of an elastic job's pods: Berth
	// adds it to the job's pod templates at creation and removes it from
	// a pod once quota is admitted for it.
	// +berth:setBy=Berth
	ElasticGate = "berth.dev/elastic"
	// ElasticLabel is set to "true" on the pod templates of an elastic job,
	// and so on its pods.
	// +berth:setBy=Berth
	ElasticLabel = "berth.dev/elastic"
	// SliceOfLabel is set on the Workload of a slice of an elastic job to
	// the name of the job's Workload, which the slice grows once admitted.
	// +berth:setBy=Berth
	SliceOfLabel = "berth.dev/slice-of"
	// SliceFlavorsAnnotation is set on a slice's Workload to the flavor of
	// each resource of each podset, as JSON: a slice is admitted only in
	// the flavors its job runs in.
	// +berth:setBy=Berth
	SliceFlavorsAnnotation = "berth.dev/slice-flavors"
	// SliceBaseAnnotation is set on a slice's Workload to the counts its
	// job's Workload was admitted for when the slice was made, as JSON.
	// +berth:setBy=Berth
	SliceBaseAnnotation = "berth.dev/slice-base"

	// ResourceInUseFinalizer keeps a ClusterQueue while workloads hold its
	// quota, so that deleting it lets admitted workloads run to completion.
	// +berth:setBy=Berth
	ResourceInUseFinalizer = "berth.dev/resource-in-use"
)

// The labels and annotations that Berth writes on users' pods, which no one
// else may change: Berth's webhook refuses it, naming the key. The pod's
// membership in a workload and its place in the workload's gangs rest on
// them.
var (
	OwnedLabels      = []string{ManagedLabel, WorkloadLabel, PodSetLabel, ElasticLabel}
	OwnedAnnotations = []string{PodSetSizeAnnotation, PodSetTopologyAssignmentAnnotation, PodGroupRoleAnnotation}
)

// Condition types of a ClusterQueue and a LocalQueue.
const (
	// ConditionActive is True when the queue can admit workloads.
	ConditionActive = "Active"
	// ConditionUnusedSettings is True, with reason FeatureDisabled, when
	// a field of the queue's spec has no effect because the controller
	// configuration turns its feature off; the message names the field
	// and the setting that turns it on. Absent when every field counts.
	ConditionUnusedSettings = "UnusedSettings"
	// ReasonFeatureDisabled is the reason of UnusedSettings, and of the
	// Warning event on a Cohort, ClusterQueue or LocalQueue whose spec
	// names a feature the controller configuration has off.
	ReasonFeatureDisabled = "FeatureDisabled"
	// ReasonNotSupported is the reason of UnusedSettings, and of the
	// Warning event, when a field is accepted, in Kueue's shape, but Berth
	// has no such feature.
	ReasonNotSupported = "NotSupported"
)

// Reasons of the Active condition.
const (
	// ReasonReady means the queue has everything it needs to admit.
	ReasonReady = "Ready"
	// ReasonFlavorNotFound means a ResourceFlavor the queue names does not exist.
	ReasonFlavorNotFound = "FlavorNotFound"
	// ReasonClusterQueueNotFound means a LocalQueue's ClusterQueue does not exist.
	ReasonClusterQueueNotFound = "ClusterQueueNotFound"
	// ReasonClusterQueueInactive means a LocalQueue's ClusterQueue is not active.
	ReasonClusterQueueInactive = "ClusterQueueInactive"
	// ReasonStopped means the queue's stopPolicy holds it.
	ReasonStopped = "Stopped"
	// ReasonTerminating means the queue is being deleted.
	ReasonTerminating = "Terminating"
	// ReasonCohortCycle means the parentName links of the cohorts above
	// the queue form a cycle.
	ReasonCohortCycle = "CohortCycle"
)

// Condition types of a Workload.
const (
	// WorkloadQuotaReserved is True when quota is reserved for the workload
	// in a ClusterQueue. While False, its message says why it waits.
	WorkloadQuotaReserved = "QuotaReserved"
	// WorkloadAdmitted is True when the workload may run.
	WorkloadAdmitted = "Admitted"
	// WorkloadEvicted is True when an admitted workload was told to stop.
	WorkloadEvicted = "Evicted"
	// WorkloadPreempted is True when the workload was evicted to make room
	// for another.
	WorkloadPreempted = "Preempted"
	// WorkloadRequeued is True when an evicted workload is queued again.
	WorkloadRequeued = "Requeued"
	// WorkloadPodsReady is True when all pods of the workload are ready.
	WorkloadPodsReady = "PodsReady"
	// WorkloadFinished is True when the workload has completed and released
	// its quota.
	WorkloadFinished = "Finished"
)

// Reasons of Workload conditions.
const (
	// ReasonPending means the workload waits for quota; the message says why.
	ReasonPending = "Pending"
	// ReasonQuotaReserved means quota is reserved for the workload.
	ReasonQuotaReserved = "QuotaReserved"
	// ReasonAdmitted means the workload was admitted.
	ReasonAdmitted = "Admitted"
	// ReasonInadmissible means the workload cannot be admitted as it is, for
	// example because its LocalQueue does not exist.
	ReasonInadmissible = "Inadmissible"

	// ReasonPreempted is the Evicted reason for a preempted workload.
	ReasonPreempted = "Preempted"
	// ReasonClusterQueueStopped is the Evicted reason when the ClusterQueue
	// is stopped with HoldAndDrain.
	ReasonClusterQueueStopped = "ClusterQueueStopped"
	// ReasonLocalQueueStopped is the Evicted reason when the LocalQueue is
	// stopped with HoldAndDrain.
	ReasonLocalQueueStopped = "LocalQueueStopped"
	// ReasonDeactivated is the Evicted reason when spec.active is false.
	ReasonDeactivated = "Deactivated"
	// ReasonPodSetsChanged means the job's pod sets changed after its
	// workload was admitted for others: it is stopped, and its Workload
	// replaced.
	ReasonPodSetsChanged = "PodSetsChanged"
	// ReasonRequeuingLimitExceeded means the workload was evicted and
	// requeued as many times as the backoff allows, and is deactivated.
	ReasonRequeuingLimitExceeded = "RequeuingLimitExceeded"
	// ReasonPodsReadyTimeout is the Evicted reason when the pods did not
	// become ready in time, or did not recover in time.
	ReasonPodsReadyTimeout = "PodsReadyTimeout"
	// ReasonNodeFailures is the Evicted reason when a node that ran some of
	// the workload's pods failed (not Ready, or deleted) for longer than
	// the controller's nodeFailures.gracePeriod.
	ReasonNodeFailures = "NodeFailures"
	// ReasonMaximumExecutionTimeExceeded is the Evicted reason, and the
	// Requeued=False reason of the deactivation that follows, when a
	// workload ran longer than spec.maximumExecutionTimeSeconds.
	ReasonMaximumExecutionTimeExceeded = "MaximumExecutionTimeExceeded"
	// ReasonPodsReady is the PodsReady=True reason.
	ReasonPodsReady = "PodsReady"
	// ReasonWaitForStart is the PodsReady=False reason of an admitted
	// workload whose pods were never all ready since its admission:
	// waitForPodsReady.timeout runs from the admission.
	ReasonWaitForStart = "WaitForStart"
	// ReasonWaitForRecovery is the PodsReady=False reason of a running
	// workload whose pods were all ready and are no longer:
	// waitForPodsReady.recoveryTimeout runs from the condition's
	// lastTransitionTime.
	ReasonWaitForRecovery = "WaitForRecovery"

	// ReasonAdmissionCheck is the Evicted reason when an admission check
	// asks for a retry or rejects the workload.
	ReasonAdmissionCheck = "AdmissionCheck"

	// ReasonAdmissionCheckNotFound is the reason of a ClusterQueue's
	// Active=False when a check it names does not exist.
	ReasonAdmissionCheckNotFound = "AdmissionCheckNotFound"
	// ReasonAdmissionCheckInactive is the reason of a ClusterQueue's
	// Active=False when a check it names is not active.
	ReasonAdmissionCheckInactive = "AdmissionCheckInactive"

	// ReasonBadParameters is the reason of the Active=False condition of
	// an AdmissionCheck of Berth's own check when it cannot make
	// ProvisioningRequests: its parameters name no ProvisioningRequestConfig
	// that exists, or the cluster does not serve ProvisioningRequests.
	ReasonBadParameters = "BadParameters"

	// ReasonInClusterQueue is the Preempted reason when the preemptor is in
	// the same ClusterQueue.
	ReasonInClusterQueue = "InClusterQueue"
	// ReasonInCohortReclamation is the Preempted reason when the preemptor's
	// ClusterQueue takes back quota it lent.
	ReasonInCohortReclamation = "InCohortReclamation"
	// ReasonInCohortReclaimWhileBorrowing is the Preempted reason when the
	// preemptor takes quota from a lower-priority workload while borrowing.
	ReasonInCohortReclaimWhileBorrowing = "InCohortReclaimWhileBorrowing"

	// ReasonSucceeded is the Finished reason of a workload that succeeded.
	ReasonSucceeded = "Succeeded"
	// ReasonFailed is the Finished reason of a workload that failed.
	ReasonFailed = "Failed"
)
