package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkerClusterKubeConfigKey is the key of a WorkerCluster's Secret that
// holds its kubeconfig.
const WorkerClusterKubeConfigKey = "kubeconfig"

// The admission check that dispatches workloads to worker clusters, and
// the keys of the copies it makes there.
const (
	// MultiClusterControllerName is the controllerName of the checks that
	// dispatch a workload to worker clusters: its parameters name a
	// MultiClusterConfig. A job in a ClusterQueue with such a check runs
	// in the worker whose own Berth admits its copy first.
	// +berth:setBy=user
	MultiClusterControllerName = "berth.dev/multicluster"

	// MultiClusterOriginLabel is set on the copies of a job in a worker
	// cluster, and on their Workloads, to the origin of the manager that
	// made them (the configuration's multiCluster.origin).
	// +berth:setBy=Berth
	MultiClusterOriginLabel = "berth.dev/multicluster-origin"

	// MultiClusterWorkloadAnnotation is set on the copies of a job in a
	// worker cluster to the name of the job's Workload in the manager.
	// +berth:setBy=Berth
	MultiClusterWorkloadAnnotation = "berth.dev/multicluster-workload"

	// MultiClusterAttemptAnnotation is set on the copies of a job in a
	// worker cluster to the manager Workload's requeue count when they
	// were made: a copy of an earlier attempt, left in a worker that was
	// lost, is deleted when the worker returns.
	// +berth:setBy=Berth
	MultiClusterAttemptAnnotation = "berth.dev/multicluster-attempt"
)

// Reasons of a WorkerCluster's Active condition.
const (
	// ReasonWorkerReachable means the worker's API server answered.
	ReasonWorkerReachable = "Reachable"
	// ReasonWorkerSecretMissing means the Secret, or its kubeconfig key,
	// is not there, or cannot be read.
	ReasonWorkerSecretMissing = "SecretMissing"
	// ReasonWorkerBadKubeConfig means the kubeconfig cannot be used.
	ReasonWorkerBadKubeConfig = "BadKubeConfig"
	// ReasonWorkerUnreachable means the worker's API server did not
	// answer within 10 seconds.
	ReasonWorkerUnreachable = "Unreachable"
)

// KubeConfigLocationType is where a kubeconfig is kept.
//
// +kubebuilder:validation:Enum=Secret
type KubeConfigLocationType string

// SecretLocationType keeps a kubeconfig in a Secret of Berth's namespace.
const SecretLocationType KubeConfigLocationType = "Secret"

// KubeConfig says where a worker cluster's kubeconfig is.
type KubeConfig struct {
	// Location is the name of the Secret, in Berth's namespace, whose key
	// kubeconfig holds it.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Location string `json:"location"`

	// LocationType is Secret, the only kind of location.
	//
	// +kubebuilder:default=Secret
	// +optional
	LocationType KubeConfigLocationType `json:"locationType,omitempty"`
}

// WorkerClusterSpec says how to reach a worker cluster.
type WorkerClusterSpec struct {
	// KubeConfig is where the credentials of Berth's account in the worker
	// cluster are.
	KubeConfig KubeConfig `json:"kubeConfig"`
}

// WorkerClusterStatus is whether the worker cluster can be reached.
type WorkerClusterStatus struct {
	// Conditions hold Active: True while the worker's API server answers,
	// False with the reason (SecretMissing, BadKubeConfig, Unreachable)
	// otherwise. It is checked again every 30 seconds.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkerCluster is a cluster, other than the one Berth runs in, where
// workloads may be dispatched to run: its own Berth admits them there.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkerCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says how to reach it.
	Spec WorkerClusterSpec `json:"spec"`
	// Status says whether it can be reached.
	//
	// +optional
	Status WorkerClusterStatus `json:"status,omitempty"`
}

// WorkerClusterList is a list of WorkerClusters.
//
// +kubebuilder:object:root=true
type WorkerClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the WorkerClusters.
	Items []WorkerCluster `json:"items"`
}

// MultiClusterConfigSpec lists the worker clusters of a check.
type MultiClusterConfigSpec struct {
	// Clusters are the names of the WorkerClusters a workload may be
	// dispatched to.
	//
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=253
	Clusters []string `json:"clusters"`
}

// MultiClusterConfig lists worker clusters a workload may be dispatched
// to: the parameters of the admission check that will dispatch them.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:storageversion
type MultiClusterConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the worker clusters.
	Spec MultiClusterConfigSpec `json:"spec"`
}

// MultiClusterConfigList is a list of MultiClusterConfigs.
//
// +kubebuilder:object:root=true
type MultiClusterConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the MultiClusterConfigs.
	Items []MultiClusterConfig `json:"items"`
}
