package provisioning

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Setup registers the check's reconcilers with mgr. A cluster that does
// not serve ProvisioningRequests (no cluster-autoscaler installed its CRD)
// gets none of the requests' reconciler, and its checks of
// berth.dev/provisioning-request are inactive, saying so.
func Setup(mgr ctrl.Manager, w workloadwriter.Writer) error {
	gvk := autoscalingv1.GroupVersion.WithKind("ProvisioningRequest")
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if !meta.IsNoMatchError(err) {
			return fmt.Errorf("looking up the ProvisioningRequest API: %w", err)
		}
		return setupChecks(mgr, "the cluster does not serve ProvisioningRequests (autoscaling.x-k8s.io/v1): install cluster-autoscaler's CRD and restart Berth")
	}
	if err := setupChecks(mgr, ""); err != nil {
		return err
	}
	return (&RequestReconciler{client: mgr.GetClient(), writer: w}).SetupWithManager(mgr)
}
