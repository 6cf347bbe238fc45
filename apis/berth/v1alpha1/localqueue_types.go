package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultLocalQueueName is the LocalQueue that takes the jobs of its
// namespace that name none, in the namespaces the controller
// configuration's managedJobsNamespaceSelector selects: Berth writes
// QueueNameLabel with this name on them when they are created.
const DefaultLocalQueueName = "default"

// LocalQueueSpec names the ClusterQueue a namespace submits to.
type LocalQueueSpec struct {
	// ClusterQueue is the ClusterQueue whose quota this queue's workloads
	// use. It cannot be changed.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterQueue is immutable"
	ClusterQueue ClusterQueueReference `json:"clusterQueue"`

	// StopPolicy holds the queue: Hold admits nothing new, HoldAndDrain also
	// evicts the admitted workloads.
	//
	// +optional
	// +kubebuilder:default=None
	StopPolicy StopPolicy `json:"stopPolicy,omitempty"`

	// FairSharing is the queue's weight among the LocalQueues of its
	// ClusterQueue, with admission fair sharing: its recent usage is
	// divided by it, so a queue of weight 2 may use twice what one of
	// weight 1 does and still go first. 0 means its workloads go after
	// every other queue's. At most 1M; 1 when absent.
	//
	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`
}

// LocalQueueFlavorUsage is what a LocalQueue's workloads use of one flavor.
type LocalQueueFlavorUsage struct {
	// Name is the flavor.
	Name ResourceFlavorReference `json:"name"`

	// Resources is the usage per resource.
	//
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Resources []ResourceUsage `json:"resources"`
}

// LocalQueueStatus is what a LocalQueue's workloads hold.
type LocalQueueStatus struct {
	// Conditions hold the Active condition.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// PendingWorkloads is the number of workloads waiting for quota.
	//
	// +optional
	PendingWorkloads int32 `json:"pendingWorkloads"`

	// ReservingWorkloads is the number of workloads holding quota.
	//
	// +optional
	ReservingWorkloads int32 `json:"reservingWorkloads"`

	// AdmittedWorkloads is the number of admitted workloads.
	//
	// +optional
	AdmittedWorkloads int32 `json:"admittedWorkloads"`

	// FlavorsUsage is the quota used by admitted workloads per flavor.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	FlavorsUsage []LocalQueueFlavorUsage `json:"flavorsUsage,omitempty"`

	// FairSharing is the queue's recent usage, with admission fair
	// sharing.
	//
	// +optional
	FairSharing *FairSharingStatus `json:"fairSharing,omitempty"`
}

// LocalQueue is what a namespace's jobs are submitted to. It refers to one
// ClusterQueue, whose quota its workloads use.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=lq
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="ClusterQueue",type=string,JSONPath=".spec.clusterQueue",description="The ClusterQueue whose quota the queue uses"
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=".status.pendingWorkloads",description="Workloads waiting for quota"
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=".status.admittedWorkloads",description="Admitted workloads"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type LocalQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the ClusterQueue.
	Spec LocalQueueSpec `json:"spec"`

	// Status is what the queue's workloads hold.
	Status LocalQueueStatus `json:"status,omitempty"`
}

// LocalQueueList is a list of LocalQueues.
//
// +kubebuilder:object:root=true
type LocalQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the LocalQueues.
	Items []LocalQueue `json:"items"`
}
