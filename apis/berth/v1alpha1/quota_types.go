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
// +kubebuilder:validation:XValidation:rule="quantity(string(self.nominalQuota)).sign() >= 0",message="nominalQuota must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.borrowingLimit) || quantity(string(self.borrowingLimit)).sign() >= 0",message="borrowingLimit must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || quantity(string(self.lendingLimit)).sign() >= 0",message="lendingLimit must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || quantity(string(self.lendingLimit)).compareTo(quantity(string(self.nominalQuota))) <= 0",message="lendingLimit must be less than or equal to nominalQuota"
type ResourceQuota struct {
	// Name is the resource, for example cpu or nvidia.com/gpu.
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
