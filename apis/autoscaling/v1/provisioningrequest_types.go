package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The conditions of a ProvisioningRequest.
const (
	// Accepted: the autoscaler took the request.
	Accepted = "Accepted"
	// Provisioned: the capacity is there, booked for the request's pods.
	Provisioned = "Provisioned"
	// Failed: the capacity cannot be had.
	Failed = "Failed"
	// BookingExpired: the pods did not come in time and the capacity was
	// given back.
	BookingExpired = "BookingExpired"
	// CapacityRevoked: the capacity was taken back after it was provisioned.
	CapacityRevoked = "CapacityRevoked"
)

// The annotations that tie pods to a ProvisioningRequest.
const (
	// ConsumesAnnotation names the request whose capacity a pod uses.
	ConsumesAnnotation = "autoscaling.x-k8s.io/consume-provisioning-request"
	// ClassNameAnnotation names that request's class.
	ClassNameAnnotation = "autoscaling.x-k8s.io/provisioning-class-name"
)

// BestEffortAtomicScaleUp is the class that provisions all the pods' nodes
// or none.
const BestEffortAtomicScaleUp = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"

// Parameter is a value of a class's parameter.
//
// +kubebuilder:validation:MaxLength=32768
type Parameter string

// Detail is a value of a class's detail in the status.
//
// +kubebuilder:validation:MaxLength=32768
type Detail string

// Reference names a PodTemplate in the request's namespace.
type Reference struct {
	// Name is the PodTemplate.
	//
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// PodSet is a number of pods of one template.
type PodSet struct {
	// PodTemplateRef is the pods' template.
	PodTemplateRef Reference `json:"podTemplateRef"`

	// Count is the number of pods.
	//
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
}

// ProvisioningRequestSpec is the capacity asked for.
//
// +kubebuilder:validation:XValidation:rule="self.provisioningClassName == oldSelf.provisioningClassName",message="provisioningClassName is immutable"
// +kubebuilder:validation:XValidation:rule="self.podSets == oldSelf.podSets",message="podSets are immutable"
type ProvisioningRequestSpec struct {
	// PodSets are the pods the capacity is for.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	PodSets []PodSet `json:"podSets"`

	// ProvisioningClassName is the class of the request.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ProvisioningClassName string `json:"provisioningClassName"`

	// Parameters are the class's parameters.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=100
	Parameters map[string]Parameter `json:"parameters,omitempty"`
}

// ProvisioningRequestStatus is where the request is.
type ProvisioningRequestStatus struct {
	// Conditions hold Accepted, Provisioned, Failed, BookingExpired and
	// CapacityRevoked.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ProvisioningClassDetails are the class's details.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	ProvisioningClassDetails map[string]Detail `json:"provisioningClassDetails,omitempty"`
}

// ProvisioningRequest asks the cluster autoscaler for the nodes of a set of
// pods before they are created.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=provreq;provreqs
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=".spec.provisioningClassName"
// +kubebuilder:printcolumn:name="Provisioned",type=string,JSONPath=".status.conditions[?(@.type==\"Provisioned\")].status"
// +kubebuilder:printcolumn:name="Failed",type=string,JSONPath=".status.conditions[?(@.type==\"Failed\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type ProvisioningRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the capacity asked for.
	Spec ProvisioningRequestSpec `json:"spec"`

	// Status is where the request is.
	Status ProvisioningRequestStatus `json:"status,omitempty"`
}

// ProvisioningRequestList is a list of ProvisioningRequests.
//
// +kubebuilder:object:root=true
type ProvisioningRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ProvisioningRequests.
	Items []ProvisioningRequest `json:"items"`
}
