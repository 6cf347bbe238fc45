package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdmissionCheckReference names an AdmissionCheck.
//
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
type AdmissionCheckReference string

// The names of Berth's own admission check.
const (
	// ProvisioningRequestControllerName is the controllerName of the checks
	// that Berth runs itself: each asks the cluster autoscaler for the nodes
	// of the workload's pods with a ProvisioningRequest.
	// +berth:setBy=user
	ProvisioningRequestControllerName = "berth.dev/provisioning-request"

	// AdmissionCheckLabel is set on the ProvisioningRequests of Berth's
	// check to the name of the AdmissionCheck that made them; berth.dev/workload
	// on them names the Workload they are for.
	// +berth:setBy=Berth
	AdmissionCheckLabel = "berth.dev/admission-check"
)

// AdmissionCheckParametersReference names the object that configures a
// check.
type AdmissionCheckParametersReference struct {
	// APIGroup is the object's API group.
	//
	// +kubebuilder:validation:MaxLength=253
	APIGroup string `json:"apiGroup"`

	// Kind is the object's kind.
	//
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name is the object's name.
	//
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// AdmissionCheckSpec says which controller decides the check.
type AdmissionCheckSpec struct {
	// ControllerName is the controller that decides the check:
	// berth.dev/provisioning-request for Berth's own, or another
	// controller's name. It cannot be changed.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.controllerName is immutable"
	ControllerName string `json:"controllerName"`

	// Parameters configure the check; for berth.dev/provisioning-request a
	// ProvisioningRequestConfig of berth.dev.
	//
	// +optional
	Parameters *AdmissionCheckParametersReference `json:"parameters,omitempty"`
}

// AdmissionCheckStatus is whether the check's controller runs it.
type AdmissionCheckStatus struct {
	// Conditions hold Active: whether the check's controller runs it and
	// its parameters are valid.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AdmissionCheck is a condition, besides quota, that a workload must meet
// before it is admitted: a ClusterQueue that names it reserves quota
// first, and admits the workload once the check's controller says Ready.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ac
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Controller",type=string,JSONPath=".spec.controllerName"
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=".status.conditions[?(@.type==\"Active\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type AdmissionCheck struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the check's controller.
	Spec AdmissionCheckSpec `json:"spec"`

	// Status is whether the controller runs it.
	Status AdmissionCheckStatus `json:"status,omitempty"`
}

// AdmissionCheckList is a list of AdmissionChecks.
//
// +kubebuilder:object:root=true
type AdmissionCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the AdmissionChecks.
	Items []AdmissionCheck `json:"items"`
}

// AdmissionChecksStrategy names a ClusterQueue's checks, each for some of
// its flavors or all.
type AdmissionChecksStrategy struct {
	// AdmissionChecks are the checks and the flavors they apply to.
	//
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	AdmissionChecks []AdmissionCheckStrategyRule `json:"admissionChecks"`
}

// AdmissionCheckStrategyRule is one check of a ClusterQueue.
type AdmissionCheckStrategyRule struct {
	// Name is the AdmissionCheck.
	Name AdmissionCheckReference `json:"name"`

	// OnFlavors are the flavors whose workloads the check applies to: a
	// workload is checked when its admission uses one of them. Empty, all.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	OnFlavors []ResourceFlavorReference `json:"onFlavors,omitempty"`
}

// CheckState is where a workload is with one admission check.
//
// +kubebuilder:validation:Enum=Pending;Ready;Retry;Rejected
type CheckState string

// The states of an admission check.
const (
	// CheckStatePending: the check has not decided yet.
	CheckStatePending CheckState = "Pending"
	// CheckStateReady: the workload may be admitted as far as the check
	// goes.
	CheckStateReady CheckState = "Ready"
	// CheckStateRetry: the workload's quota is released and it is queued
	// again, after a backoff.
	CheckStateRetry CheckState = "Retry"
	// CheckStateRejected: the workload cannot be admitted; it is
	// deactivated with the check's message.
	CheckStateRejected CheckState = "Rejected"
)

// AdmissionCheckState is the state of one check of a workload.
type AdmissionCheckState struct {
	// Name is the AdmissionCheck.
	Name AdmissionCheckReference `json:"name"`

	// State is Pending, Ready, Retry or Rejected.
	State CheckState `json:"state"`

	// LastTransitionTime is when the state last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`

	// Message says why the check is in its state.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`

	// RequeueAfterSeconds, with state Retry, is how long the workload
	// waits after its quota is released before it is queued again.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	RequeueAfterSeconds *int32 `json:"requeueAfterSeconds,omitempty"`

	// PodSetUpdates are what the check adds to the pods of each podset
	// when the workload starts, such as the annotation that has the pods
	// use the nodes provisioned for them.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	PodSetUpdates []PodSetUpdate `json:"podSetUpdates,omitempty"`
}

// PodSetUpdate is what a check adds to the pods of one podset.
type PodSetUpdate struct {
	// Name is the podset.
	Name string `json:"name"`

	// Labels are added to the pods.
	//
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the pods.
	//
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// NodeSelector is added to the pods' node selector.
	//
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are added to the pods' tolerations.
	//
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// ProvisioningRequestConfigSpec is how Berth asks for nodes.
type ProvisioningRequestConfigSpec struct {
	// ProvisioningClassName is the ProvisioningRequest's class, e.g.
	// best-effort-atomic-scale-up.autoscaling.x-k8s.io.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ProvisioningClassName string `json:"provisioningClassName"`

	// Parameters are passed to the ProvisioningRequest as they are.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=100
	Parameters map[string]string `json:"parameters,omitempty"`

	// RetryStrategy says how often, and after how long, a failed request
	// is tried again before the workload is rejected.
	//
	// +optional
	RetryStrategy *ProvisioningRequestRetryStrategy `json:"retryStrategy,omitempty"`

	// ManagedResources are the resources the cluster autoscaler provisions
	// nodes for. The request holds only the podsets that ask for at least
	// one of them; a workload none of whose podsets does passes the check
	// without a request. Empty: every podset is asked for.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	ManagedResources []corev1.ResourceName `json:"managedResources,omitempty"`

	// PodSetUpdates say what the pods of the podsets in the request get
	// once it is provisioned, besides the annotations that have them use
	// its nodes.
	//
	// +optional
	PodSetUpdates *ProvisioningRequestPodSetUpdates `json:"podSetUpdates,omitempty"`

	// PodSetMergePolicy merges the podsets whose pods would be alike into
	// one podset of the request: IdenticalPodTemplates (the same pod
	// template, flavor directives included) or
	// IdenticalWorkloadSchedulingRequirements (the same requests, node
	// selector, tolerations, affinity and priority class). Unset: one per
	// podset.
	//
	// +optional
	// +kubebuilder:validation:Enum=IdenticalPodTemplates;IdenticalWorkloadSchedulingRequirements
	PodSetMergePolicy *ProvisioningRequestPodSetMergePolicy `json:"podSetMergePolicy,omitempty"`
}

// ProvisioningRequestPodSetUpdates are what the pods of a provisioned
// request get.
type ProvisioningRequestPodSetUpdates struct {
	// NodeSelector entries take their value from the request's
	// status.provisioningClassDetails, so that the pods go to the nodes the
	// class provisioned (a reservation's name, say). A detail the request
	// lacks adds nothing.
	//
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=8
	NodeSelector []ProvisioningRequestPodSetUpdatesNodeSelector `json:"nodeSelector,omitempty"`
}

// ProvisioningRequestPodSetUpdatesNodeSelector is one node selector entry
// of a provisioned request's pods.
type ProvisioningRequestPodSetUpdatesNodeSelector struct {
	// Key is the node label.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`

	// ValueFromProvisioningClassDetail is the detail whose value the
	// label must have.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32768
	ValueFromProvisioningClassDetail string `json:"valueFromProvisioningClassDetail"`
}

// ProvisioningRequestPodSetMergePolicy is how podsets are merged in a
// request.
type ProvisioningRequestPodSetMergePolicy string

// The merge policies.
const (
	IdenticalPodTemplates                   ProvisioningRequestPodSetMergePolicy = "IdenticalPodTemplates"
	IdenticalWorkloadSchedulingRequirements ProvisioningRequestPodSetMergePolicy = "IdenticalWorkloadSchedulingRequirements"
)

// ProvisioningRequestRetryStrategy is when a failed ProvisioningRequest is
// tried again.
type ProvisioningRequestRetryStrategy struct {
	// BackoffLimitCount is how many times a failed request is tried again;
	// after that the check rejects the workload. Default 3.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackoffLimitCount *int32 `json:"backoffLimitCount,omitempty"`

	// BackoffBaseSeconds is the wait before the first retry; each next
	// doubles it. Default 60; 0 tries again at once, every time.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackoffBaseSeconds *int32 `json:"backoffBaseSeconds,omitempty"`

	// BackoffMaxSeconds caps the wait. Default 1800.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	BackoffMaxSeconds *int32 `json:"backoffMaxSeconds,omitempty"`
}

// ProvisioningRequestConfig configures the admission checks of
// berth.dev/provisioning-request.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=".spec.provisioningClassName"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type ProvisioningRequestConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how Berth asks for nodes.
	Spec ProvisioningRequestConfigSpec `json:"spec"`
}

// ProvisioningRequestConfigList is a list of ProvisioningRequestConfigs.
//
// +kubebuilder:object:root=true
type ProvisioningRequestConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ProvisioningRequestConfigs.
	Items []ProvisioningRequestConfig `json:"items"`
}
