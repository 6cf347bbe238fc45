// Package v1alpha1 is the visibility.berth.dev/v1alpha1 API: the pending
// workloads of a ClusterQueue or of a LocalQueue, in the order Berth will
// try them, served by the controller through the API server's aggregation
// layer (pkg/visibility). Nothing is stored: every answer is read from the
// controller's own queues.
//
//	GET /apis/visibility.berth.dev/v1alpha1/clusterqueues/NAME/pendingworkloads?offset=0&limit=100
//	GET /apis/visibility.berth.dev/v1alpha1/namespaces/NS/localqueues/NAME/pendingworkloads
//
// +kubebuilder:object:generate=true
// +groupName=visibility.berth.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is visibility.berth.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "visibility.berth.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the API's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &PendingWorkloadsSummary{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the API's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
