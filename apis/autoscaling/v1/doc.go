// Package v1 mirrors the part of cluster-autoscaler's published
// autoscaling.x-k8s.io/v1 API that Berth uses: the ProvisioningRequest, by
// which a workload asks for nodes before it runs. cluster-autoscaler's own
// API module cannot be fetched here, so the fields below are written from
// its published API (same names, types and meaning), and the CRD in
// config/components/provisioningrequest is generated from them for
// clusters, such as the local one, that have no cluster-autoscaler to
// install it.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is autoscaling.x-k8s.io/v1.
	GroupVersion = schema.GroupVersion{Group: "autoscaling.x-k8s.io", Version: "v1"}

	// SchemeBuilder registers the ProvisioningRequest with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &ProvisioningRequest{}, &ProvisioningRequestList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the ProvisioningRequest to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
