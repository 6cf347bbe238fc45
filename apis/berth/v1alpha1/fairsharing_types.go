package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FairSharing is how a ClusterQueue or a Cohort shares what its parent
// cohort lends, when the controller configuration turns fair sharing on.
type FairSharing struct {
	// Weight is the queue's claim on what its cohort lends, relative to its
	// siblings': the shares that Berth evens out are divided by it, so a
	// queue of weight 2 may borrow twice what one of weight 1 does before
	// their shares are equal. 0 means the queue borrows only what no
	// sibling wants, and never preempts to borrow; it keeps its nominal
	// quota all the same. At most 1M; 1 when absent.
	//
	// +optional
	Weight *resource.Quantity `json:"weight,omitempty"`
}

// FairSharingStatus is a queue's share of what its cohort lends or, for a
// LocalQueue, of what its ClusterQueue admits.
type FairSharingStatus struct {
	// WeightedShare is the queue's dominant share, per mille, divided by
	// its weight: the largest, over the resources, of what it uses above
	// its nominal quota to what its cohort can lend of that resource. 0
	// while it borrows nothing; the largest int64 while it borrows with
	// weight 0.
	//
	// For a LocalQueue in a ClusterQueue with admission fair sharing it is
	// the queue's recent usage, per mille of the ClusterQueue's nominal
	// quota, divided by its weight: the number its workloads are ordered by,
	// lowest first.
	WeightedShare int64 `json:"weightedShare"`

	// AdmissionFairSharingStatus is a LocalQueue's recent usage, with
	// admission fair sharing.
	//
	// +optional
	AdmissionFairSharingStatus *AdmissionFairSharingStatus `json:"admissionFairSharingStatus,omitempty"`
}

// AdmissionMode is how a ClusterQueue orders its pending workloads.
//
// +kubebuilder:validation:Enum=UsageBasedAdmissionFairSharing;NoAdmissionFairSharing
type AdmissionMode string

// The admission modes.
const (
	// UsageBasedAdmissionFairSharing orders the workloads by their
	// LocalQueue's recent usage, lowest first, then by priority and age.
	UsageBasedAdmissionFairSharing AdmissionMode = "UsageBasedAdmissionFairSharing"
	// NoAdmissionFairSharing orders them by priority and age.
	NoAdmissionFairSharing AdmissionMode = "NoAdmissionFairSharing"
)

// AdmissionScope is how a ClusterQueue shares its admissions among its
// LocalQueues.
type AdmissionScope struct {
	// AdmissionMode is UsageBasedAdmissionFairSharing or
	// NoAdmissionFairSharing.
	AdmissionMode AdmissionMode `json:"admissionMode"`
}

// AdmissionFairSharingStatus is a LocalQueue's usage over the recent past,
// each sample weighed less the older it is (it halves every
// usageHalfLifeTime of the controller configuration), with every admission
// counted at once.
type AdmissionFairSharingStatus struct {
	// ConsumedResources is the decayed usage per resource, over all flavors.
	ConsumedResources corev1.ResourceList `json:"consumedResources"`

	// LastUpdate is when the usage was last sampled.
	LastUpdate metav1.Time `json:"lastUpdate"`
}
