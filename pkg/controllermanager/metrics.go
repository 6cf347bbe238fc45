package controllermanager

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// The metrics endpoint asks the API server who a scraper is and whether it
// may read /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// MetricsOptions are the metrics server's options for the configuration
// m: over HTTPS with controller-runtime's authentication and authorization
// filter unless m turns secure serving off (the local cluster, which
// listens on loopback only).
func MetricsOptions(m configv1alpha1.Metrics) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: m.BindAddress}
	if ptr.Deref(m.SecureServing, true) {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.CertDir = m.CertDir
	}
	return opts
}
