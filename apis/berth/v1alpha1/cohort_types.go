package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CohortSpec places a cohort in the cohort tree and gives it quota of its
// own.
//
// +kubebuilder:validation:XValidation:rule="(has(self.parentName) && size(self.parentName) > 0) || !has(self.resourceGroups) || self.resourceGroups.all(g, g.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit))))",message="spec.resourceGroups[].flavors[].resources[].borrowingLimit may only be set when spec.parentName is set"
// +kubebuilder:validation:XValidation:rule="(has(self.parentName) && size(self.parentName) > 0) || !has(self.resourceGroups) || self.resourceGroups.all(g, g.flavors.all(f, f.resources.all(r, !has(r.lendingLimit))))",message="spec.resourceGroups[].flavors[].resources[].lendingLimit may only be set when spec.parentName is set"
type CohortSpec struct {
	// ParentName is the cohort this one belongs to. Quota flows up and down
	// the tree: unused quota of a subtree may be lent to the rest.
	//
	// +optional
	ParentName CohortReference `json:"parentName,omitempty"`

	// ResourceGroups is quota that belongs to the cohort itself and is
	// shared by its members.
	//
	// +optional
	ResourceGroups ResourceGroups `json:"resourceGroups,omitempty"`

	// FairSharing is the cohort's weight in its parent when fair sharing
	// is on.
	//
	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`
}

// Cohort is a group of ClusterQueues that lend each other unused quota. A
// cohort exists as soon as a ClusterQueue names it; the Cohort object is
// needed only to give it a parent or quota of its own.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cohort
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=".spec.parentName",description="The parent cohort"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.parentName) || self.spec.parentName != self.metadata.name",message="spec.parentName must not name the cohort itself"
type Cohort struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the cohort's parent and quota.
	Spec CohortSpec `json:"spec,omitempty"`
}

// CohortList is a list of Cohorts.
//
// +kubebuilder:object:root=true
type CohortList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Cohorts.
	Items []Cohort `json:"items"`
}
