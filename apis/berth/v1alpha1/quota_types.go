package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourceFlavorReference is the name of a ResourceFlavor.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
type ResourceFlavorReference string

// ClusterQueueReference is the name of a ClusterQueue.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
type ClusterQueueReference string

// CohortReference is the name of a Cohort.
//
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern="^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"
type CohortReference string

// LocalQueueName is the name of a LocalQueue in the workload's namespace.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
type LocalQueueName string

// ResourceGroup is a set of resources whose quota is given together per
// flavor: a workload takes all the resources of a group from one flavor.
//
// +kubebuilder:validation:XValidation:rule="self.flavors.all(f, f.resources.map(r, r.name) == self.coveredResources)",message="resourceGroups[].flavors[].resources must list exactly the group's coveredResources, in the same order"
type ResourceGroup struct {
	// CoveredResources are the resources whose quota this group gives.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Type=string
	// +kubebuilder:validation:items:MaxLength=253
	CoveredResources []corev1.ResourceName `json:"coveredResources"`

	// Flavors give quota for the covered resources, in order of preference:
	// a workload is assigned the first flavor that fits.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Flavors []FlavorQuotas `json:"flavors"`
}

// FlavorQuotas is the quota of one flavor for the resources of a group.
type FlavorQuotas struct {
	// Name is the ResourceFlavor this quota is for.
	Name ResourceFlavorReference `json:"name"`

	// Resources is the quota of each covered resource.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Resources []ResourceQuota `json:"resources"`
}

// ResourceQuota is the quota of one resource in one flavor.
//
// The quantities are validated by the ValidatingAdmissionPolicy in
// config/validation (CEL too, run by the API server): not negative, and
// lendingLimit <= nominalQuota. They cannot be rules of the CRD: the API
// server estimates the cost of any CEL on an int-or-string field as if the
// value were megabytes long, times every quota of the queue, far over the
// CRD's budget, while a policy's cost is counted on the actual object.
type ResourceQuota struct {
	// Name is the resource, for example cpu or nvidia.com/gpu.
	//
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=253
	Name corev1.ResourceName `json:"name"`

	// NominalQuota is the amount of the resource this queue owns. Unused,
	// it may be lent to the cohort.
	NominalQuota resource.Quantity `json:"nominalQuota"`

	// BorrowingLimit is the most this queue may borrow from its cohort above
	// its nominal quota. Absent, it may borrow all the cohort can lend. Only
	// valid with a cohort.
	//
	// +optional
	BorrowingLimit *resource.Quantity `json:"borrowingLimit,omitempty"`

	// LendingLimit is the most of its unused nominal quota this queue lends
	// to its cohort. Absent, all of it may be lent. Only valid with a
	// cohort; at most nominalQuota.
	//
	// +optional
	LendingLimit *resource.Quantity `json:"lendingLimit,omitempty"`
}
