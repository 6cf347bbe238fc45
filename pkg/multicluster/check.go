package multicluster

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/admissioncheck"
)

// setupChecks has the Active condition of each AdmissionCheck of
// berth.dev/multicluster kept: its parameters must name a
// MultiClusterConfig that exists.
func setupChecks(mgr ctrl.Manager) error {
	r := &admissioncheck.ActiveReconciler{
		Client: mgr.GetClient(), ControllerName: berthv1alpha1.MultiClusterControllerName,
		Kind: "MultiClusterConfig", NewParameters: func() client.Object { return &berthv1alpha1.MultiClusterConfig{} },
		Check: func(params client.Object) (string, string) {
			return "", fmt.Sprintf("Berth dispatches each workload to the worker clusters of MultiClusterConfig %s", params.GetName())
		},
	}
	return r.SetupWithManager(mgr, "multicluster-check")
}

// configOf reads the MultiClusterConfig of ac, or says why it cannot.
func configOf(ctx context.Context, c client.Reader, ac *berthv1alpha1.AdmissionCheck) (*berthv1alpha1.MultiClusterConfig, string, error) {
	cfg := &berthv1alpha1.MultiClusterConfig{}
	why, err := admissioncheck.Parameters(ctx, c, ac, "MultiClusterConfig", cfg)
	return cfg, why, err
}
