package provisioning

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/admissioncheck"
)

// setupChecks has the Active condition of each AdmissionCheck of
// berth.dev/provisioning-request kept: its parameters must name a
// ProvisioningRequestConfig that exists, and the cluster must serve
// ProvisioningRequests (missingCRD, when set, says why it does not).
func setupChecks(mgr ctrl.Manager, missingCRD string) error {
	r := &admissioncheck.ActiveReconciler{
		Client: mgr.GetClient(), ControllerName: berthv1alpha1.ProvisioningRequestControllerName,
		Kind: "ProvisioningRequestConfig", NewParameters: func() client.Object { return &berthv1alpha1.ProvisioningRequestConfig{} },
		Check: func(client.Object) (string, string) {
			return missingCRD, "Berth asks the cluster autoscaler for the nodes of each workload"
		},
	}
	return r.SetupWithManager(mgr, "provisioning-check")
}

// configOf reads the ProvisioningRequestConfig of ac, or says why it
// cannot.
func configOf(ctx context.Context, c client.Reader, ac *berthv1alpha1.AdmissionCheck) (*berthv1alpha1.ProvisioningRequestConfig, string, error) {
	cfg := &berthv1alpha1.ProvisioningRequestConfig{}
	why, err := admissioncheck.Parameters(ctx, c, ac, "ProvisioningRequestConfig", cfg)
	return cfg, why, err
}
