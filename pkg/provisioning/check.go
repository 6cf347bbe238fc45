package provisioning

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/util/shutdown"
)

// CheckReconciler says whether each AdmissionCheck of
// berth.dev/provisioning-request is active: its parameters must name a
// ProvisioningRequestConfig that exists, and the cluster must serve
// ProvisioningRequests.
type CheckReconciler struct {
	client client.Client
	// missingCRD, when set, is why ProvisioningRequests cannot be made.
	missingCRD string
}

// SetupWithManager registers the reconciler with mgr.
func (r *CheckReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("provisioning-check").For(&berthv1alpha1.AdmissionCheck{}).
		Watches(&berthv1alpha1.ProvisioningRequestConfig{}, handler.EnqueueRequestsFromMapFunc(r.checksOfConfig)).
		Complete(shutdown.UntilStopped(r))
}

// checksOfConfig maps a ProvisioningRequestConfig to the checks naming it.
func (r *CheckReconciler) checksOfConfig(ctx context.Context, obj client.Object) []reconcile.Request {
	checks := &berthv1alpha1.AdmissionCheckList{}
	if err := r.client.List(ctx, checks); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ac := range checks.Items {
		if p := ac.Spec.Parameters; p != nil && p.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ac.Name}})
		}
	}
	return out
}

// Reconcile sets the Active condition of one check of Berth's.
func (r *CheckReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ac := &berthv1alpha1.AdmissionCheck{}
	if err := r.client.Get(ctx, req.NamespacedName, ac); err != nil || ac.Spec.ControllerName != berthv1alpha1.ProvisioningRequestControllerName {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	_, why, err := r.config(ctx, ac)
	if err != nil {
		return ctrl.Result{}, err
	}
	if why == "" {
		why = r.missingCRD
	}
	cond := metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonReady,
		Message: "Berth asks the cluster autoscaler for the nodes of each workload", ObservedGeneration: ac.Generation}
	if why != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, berthv1alpha1.ReasonBadParameters, why
	}
	if !meta.SetStatusCondition(&ac.Status.Conditions, cond) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.client.Status().Update(ctx, ac)
}

// config reads the ProvisioningRequestConfig of ac, or says why it cannot.
func (r *CheckReconciler) config(ctx context.Context, ac *berthv1alpha1.AdmissionCheck) (*berthv1alpha1.ProvisioningRequestConfig, string, error) {
	return configOf(ctx, r.client, ac)
}

func configOf(ctx context.Context, c client.Reader, ac *berthv1alpha1.AdmissionCheck) (*berthv1alpha1.ProvisioningRequestConfig, string, error) {
	p := ac.Spec.Parameters
	switch {
	case p == nil:
		return nil, "spec.parameters must name a ProvisioningRequestConfig (apiGroup berth.dev)", nil
	case p.APIGroup != berthv1alpha1.GroupVersion.Group || p.Kind != "ProvisioningRequestConfig":
		return nil, fmt.Sprintf("spec.parameters names %s of %s; want a ProvisioningRequestConfig of berth.dev", p.Kind, p.APIGroup), nil
	}
	cfg := &berthv1alpha1.ProvisioningRequestConfig{}
	if err := c.Get(ctx, types.NamespacedName{Name: p.Name}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("ProvisioningRequestConfig %s named in spec.parameters does not exist", p.Name), nil
		}
		return nil, "", err
	}
	return cfg, "", nil
}
