package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSet is a group of identical pods of a workload.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minCount) || self.minCount <= self.count",message="podSets[].minCount must be less than or equal to podSets[].count"
type PodSet struct {
	// Name identifies the podset within the workload.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	Name string `json:"name"`

	// Template is the pod template of the podset's pods. Its requests are
	// what the podset takes from the queue's quota.
	//
	// The template is one field to server-side apply: whoever writes it
	// owns all of it, as a job integration does. The API server then
	// records it in the managed fields as one entry instead of one per
	// field, and every Workload it decodes, stores and sends is smaller.
	//
	// +structType=atomic
	Template corev1.PodTemplateSpec `json:"template"`

	// Count is the number of pods.
	//
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`

	// MinCount, when set, allows partial admission: the largest count
	// between MinCount and Count that fits is admitted.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinCount *int32 `json:"minCount,omitempty"`
}

// WorkloadSpec is what a workload needs and where it is queued.
type WorkloadSpec struct {
	// PodSets are the groups of pods of the workload.
	//
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	PodSets []PodSet `json:"podSets"`

	// QueueName is the LocalQueue, in the workload's namespace, the
	// workload is submitted to.
	//
	// +optional
	QueueName LocalQueueName `json:"queueName,omitempty"`

	// PriorityClassName is the WorkloadPriorityClass of the workload.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern="^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Priority is the workload's priority, resolved from PriorityClassName
	// or PriorityClassRef.
	//
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// PriorityClassRef names the class the priority comes from: the
	// WorkloadPriorityClass of PriorityClassName, or, when the job names
	// none, the PriorityClass of its pods (their priorityClassName, else
	// the cluster's globalDefault PriorityClass). Set by Berth.
	//
	// +optional
	PriorityClassRef *PriorityClassRef `json:"priorityClassRef,omitempty"`

	// Active false evicts the workload if it runs and keeps it from being
	// admitted.
	//
	// +optional
	// +kubebuilder:default=true
	Active *bool `json:"active,omitempty"`

	// MaximumExecutionTimeSeconds is how long the workload may run, in all
	// its admissions together (status.accumulatedPastExecutionTimeSeconds
	// and the current one): once over, it is evicted and deactivated with
	// reason MaximumExecutionTimeExceeded. Set from the job label
	// berth.dev/max-exec-time-seconds. Unset: no limit.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaximumExecutionTimeSeconds *int32 `json:"maximumExecutionTimeSeconds,omitempty"`
}

// PriorityClassRef names a WorkloadPriorityClass (group berth.dev) or a
// PriorityClass (group scheduling.k8s.io).
//
// +kubebuilder:validation:XValidation:rule="(self.group == 'berth.dev' && self.kind == 'WorkloadPriorityClass') || (self.group == 'scheduling.k8s.io' && self.kind == 'PriorityClass')",message="must name a berth.dev WorkloadPriorityClass or a scheduling.k8s.io PriorityClass"
type PriorityClassRef struct {
	// Group is berth.dev or scheduling.k8s.io.
	//
	// +kubebuilder:validation:Enum=berth.dev;scheduling.k8s.io
	Group string `json:"group"`

	// Kind is WorkloadPriorityClass or PriorityClass.
	//
	// +kubebuilder:validation:Enum=WorkloadPriorityClass;PriorityClass
	Kind string `json:"kind"`

	// Name is the class.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// The kinds a PriorityClassRef names.
const (
	WorkloadPriorityClassKind = "WorkloadPriorityClass"
	PriorityClassKind         = "PriorityClass"
	PriorityClassGroup        = "scheduling.k8s.io"
)

// PodSetAssignment is the flavor and count admitted for one podset.
type PodSetAssignment struct {
	// Name is the podset.
	Name string `json:"name"`

	// Flavors is the flavor assigned to each resource of the podset.
	//
	// +optional
	Flavors map[corev1.ResourceName]ResourceFlavorReference `json:"flavors,omitempty"`

	// ResourceUsage is the quota the podset takes, for all its pods.
	//
	// +optional
	ResourceUsage corev1.ResourceList `json:"resourceUsage,omitempty"`

	// Count is the number of pods admitted; less than the podset's count
	// under partial admission.
	//
	// +optional
	Count *int32 `json:"count,omitempty"`

	// TopologyAssignment is where the pods go in the flavor's topology,
	// when the flavor has one.
	//
	// +optional
	TopologyAssignment *TopologyAssignment `json:"topologyAssignment,omitempty"`
}

// Admission is where and how a workload was given quota.
type Admission struct {
	// ClusterQueue is the ClusterQueue whose quota the workload holds.
	ClusterQueue ClusterQueueReference `json:"clusterQueue"`

	// PodSetAssignments are the assignments per podset.
	//
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	PodSetAssignments []PodSetAssignment `json:"podSetAssignments"`
}

// RequeueState is how often an evicted workload was queued again.
type RequeueState struct {
	// Count is the number of times the workload was requeued.
	//
	// +optional
	Count *int32 `json:"count,omitempty"`

	// RequeueAt is when the workload may be considered again.
	//
	// +optional
	RequeueAt *metav1.Time `json:"requeueAt,omitempty"`
}

// WorkloadStatus is where the workload is in its lifecycle.
type WorkloadStatus struct {
	// Conditions are QuotaReserved, Admitted, Evicted, Preempted, Requeued,
	// PodsReady and Finished. While a workload waits, the message of its
	// QuotaReserved condition says why.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Admission is the quota the workload holds.
	//
	// The admission is one field to server-side apply: the controller
	// writes and clears it whole, so it owns all of it. The API server
	// then records it in the managed fields as one entry instead of one
	// per field, and every write of an admitted Workload costs it less.
	//
	// +optional
	// +structType=atomic
	Admission *Admission `json:"admission,omitempty"`

	// RequeueState is how often the workload was requeued.
	//
	// +optional
	RequeueState *RequeueState `json:"requeueState,omitempty"`

	// AdmissionChecks are the states of the checks of the ClusterQueue
	// that reserved quota for the workload: it is admitted once all are
	// Ready.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	AdmissionChecks []AdmissionCheckState `json:"admissionChecks,omitempty"`

	// AccumulatedPastExecutionTimeSeconds is how long the workload ran in
	// its admissions before the current one: from each Admitted=True to
	// its eviction, added at each requeue.
	//
	// +optional
	AccumulatedPastExecutionTimeSeconds *int32 `json:"accumulatedPastExecutionTimeSeconds,omitempty"`

	// ClusterName is the worker cluster a check of berth.dev/multicluster
	// dispatched the workload to: the one whose Berth admitted its copy
	// first. Cleared when the workload is requeued.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClusterName string `json:"clusterName,omitempty"`
}

// Workload is one unit of admission: the pods of one Job or JobSet. Berth
// creates it for integrated jobs; it may also be created directly.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=wl
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=".spec.queueName",description="The LocalQueue"
// +kubebuilder:printcolumn:name="Reserved in",type=string,JSONPath=".status.admission.clusterQueue",description="The ClusterQueue holding quota for the workload"
// +kubebuilder:printcolumn:name="Admitted",type=string,JSONPath=".status.conditions[?(@.type==\"Admitted\")].status",description="Whether the workload is admitted"
// +kubebuilder:printcolumn:name="Finished",type=string,JSONPath=".status.conditions[?(@.type==\"Finished\")].status",description="Whether the workload finished"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=".spec.priority",priority=1,description="The workload's priority"
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the workload needs.
	Spec WorkloadSpec `json:"spec"`

	// Status is where the workload is in its lifecycle.
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadList is a list of Workloads.
//
// +kubebuilder:object:root=true
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Workloads.
	Items []Workload `json:"items"`
}
