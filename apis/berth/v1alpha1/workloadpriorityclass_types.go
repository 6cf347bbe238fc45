package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadPriorityClass gives workloads a priority for queueing and
// preemption, independent of the pods' PriorityClass.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wpc
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Value",type=integer,JSONPath=".value",description="The priority value"
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=".globalDefault",priority=1,description="Whether it is the default class"
type WorkloadPriorityClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Value is the priority of the workloads of this class: higher is
	// admitted first and may preempt lower. Like a PriorityClass, at most
	// one billion.
	//
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=1000000000
	Value int32 `json:"value"`

	// Description says when to use this class.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// GlobalDefault makes this the class of the jobs that name none and
	// whose pods name no PriorityClass: a platform team's default priority,
	// set once, that does not change how kube-scheduler treats the pods (a
	// globalDefault PriorityClass would). Of two defaults, the lower value
	// counts.
	//
	// +optional
	GlobalDefault bool `json:"globalDefault,omitempty"`
}

// WorkloadPriorityClassList is a list of WorkloadPriorityClasses.
//
// +kubebuilder:object:root=true
type WorkloadPriorityClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the WorkloadPriorityClasses.
	Items []WorkloadPriorityClass `json:"items"`
}
