package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TopologyReference is the name of a Topology.
//
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
type TopologyReference string

// TopologyLevel is one level of a fabric, named by the node label whose
// value tells a node's domain at that level.
type TopologyLevel struct {
	// NodeLabel is the label key, e.g. cloud.berth.dev/rack.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern="^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
	NodeLabel string `json:"nodeLabel"`
}

// TopologySpec lists the levels of a fabric.
type TopologySpec struct {
	// Levels are the fabric's levels from the widest domain (a block) to
	// the narrowest (a host, kubernetes.io/hostname). They cannot change:
	// admitted workloads' assignments name domains by them.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.nodeLabel == a.nodeLabel))",message="spec.levels[].nodeLabel must be unique"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.levels is immutable"
	Levels []TopologyLevel `json:"levels"`
}

// Topology is how the nodes of a flavor are wired: blocks of racks of
// hosts, by node labels. A flavor that names one admits a podset only
// where its nodes can take the pods as the podset asks (all in one rack,
// or in as few racks as possible) and confines the pods there.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:storageversion
type Topology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the levels.
	Spec TopologySpec `json:"spec"`
}

// TopologyList is a list of Topologies.
//
// +kubebuilder:object:root=true
type TopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Topologies.
	Items []Topology `json:"items"`
}

// TopologyAssignment is where a podset's pods were admitted in its
// flavor's topology.
type TopologyAssignment struct {
	// Levels are the node label keys of the domains' values, the
	// topology's levels.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Levels []string `json:"levels"`

	// Domains are the narrowest domains that take pods, and how many.
	//
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100000
	Domains []TopologyDomainAssignment `json:"domains"`
}

// TopologyDomainAssignment is one domain of a TopologyAssignment.
type TopologyDomainAssignment struct {
	// Values are the domain's values of the levels, in their order.
	//
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Values []string `json:"values"`

	// Count is the number of pods admitted to the domain.
	//
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
}
