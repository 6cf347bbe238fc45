package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

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

// FairSharingStatus is a queue's share of what its cohort lends.
type FairSharingStatus struct {
	// WeightedShare is the queue's dominant share, per mille, divided by
	// its weight: the largest, over the resources, of what it uses above
	// its nominal quota to what its cohort can lend of that resource. 0
	// while it borrows nothing; the largest int64 while it borrows with
	// weight 0.
	WeightedShare int64 `json:"weightedShare"`
}
