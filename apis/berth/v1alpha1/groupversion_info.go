// Package v1alpha1 holds the berth.dev/v1alpha1 API: the kinds that admins
// and users apply (ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
// WorkloadPriorityClass, AdmissionCheck, ProvisioningRequestConfig) and the
// Workload that Berth admits.
//
// It holds types, validation markers and constants only, and imports
// nothing above apimachinery and k8s.io/api.
//
// +kubebuilder:object:generate=true
// +groupName=berth.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "berth.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ResourceFlavor{}, &ResourceFlavorList{},
		&Topology{}, &TopologyList{},
		&ClusterQueue{}, &ClusterQueueList{},
		&Cohort{}, &CohortList{},
		&LocalQueue{}, &LocalQueueList{},
		&Workload{}, &WorkloadList{},
		&WorkloadPriorityClass{}, &WorkloadPriorityClassList{},
		&AdmissionCheck{}, &AdmissionCheckList{},
		&ProvisioningRequestConfig{}, &ProvisioningRequestConfigList{},
		&WorkerCluster{}, &WorkerClusterList{},
		&MultiClusterConfig{}, &MultiClusterConfigList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
