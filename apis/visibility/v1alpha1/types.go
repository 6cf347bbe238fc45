package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resource names of the API, for RBAC: get on clusterqueues/pendingworkloads
// (cluster-wide) reads a ClusterQueue's; get on localqueues/pendingworkloads
// in a namespace reads that namespace's LocalQueues'. get on
// clusterdashboard reads the dashboard's pages of every queue (overview,
// queue, cohort, and their script, style and updates); get on dashboard in
// a namespace, that namespace's pages. Two resources, so that a namespace
// role bound cluster-wide (view) grants no view of the ClusterQueues.
const (
	ClusterQueuesResource    = "clusterqueues"
	LocalQueuesResource      = "localqueues"
	PendingWorkloadsResource = "pendingworkloads"
	DashboardResource        = "dashboard"
	ClusterDashboardResource = "clusterdashboard"
)

// Paging defaults: a request without limit gets DefaultLimit items, and
// no request gets more than MaxLimit.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// PendingWorkload is one workload waiting in a queue.
type PendingWorkload struct {
	// Namespace and Name are the Workload's.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// LocalQueueName is the LocalQueue it was submitted to.
	LocalQueueName string `json:"localQueueName"`
	// Priority is the Workload's priority.
	Priority int32 `json:"priority"`
	// PositionInClusterQueue and PositionInLocalQueue count from 1: the
	// first is the next the ClusterQueue tries.
	PositionInClusterQueue int32 `json:"positionInClusterQueue"`
	PositionInLocalQueue   int32 `json:"positionInLocalQueue"`
	// Message is why it waits, in numbers: its QuotaReserved condition's
	// message.
	Message string `json:"message,omitempty"`
}

// PendingWorkloadsSummary is a page of the pending workloads of one queue,
// in the order Berth will try them.
//
// +kubebuilder:object:root=true
type PendingWorkloadsSummary struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta names the queue (and its namespace, for a LocalQueue).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// ClusterQueue is the ClusterQueue whose order the positions are in.
	ClusterQueue string `json:"clusterQueue"`
	// PendingInClusterQueue is how many workloads wait in the ClusterQueue,
	// from every namespace: of a LocalQueue, the others are told only as
	// this count.
	PendingInClusterQueue int32 `json:"pendingInClusterQueue"`
	// PendingInLocalQueue is how many wait in the LocalQueue; set only for
	// a LocalQueue.
	PendingInLocalQueue int32 `json:"pendingInLocalQueue,omitempty"`
	// Items are the page asked for (offset, limit), in order.
	Items []PendingWorkload `json:"items"`
}
