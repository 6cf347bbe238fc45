package multicluster

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
// berth.dev/multicluster is active: its parameters must name a
// MultiClusterConfig that exists.
type CheckReconciler struct {
	client client.Client
}

// SetupWithManager registers the reconciler with mgr.
func (r *CheckReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("multicluster-check").For(&berthv1alpha1.AdmissionCheck{}).
		Watches(&berthv1alpha1.MultiClusterConfig{}, handler.EnqueueRequestsFromMapFunc(r.checksOfConfig)).
		Complete(shutdown.UntilStopped(r))
}

// checksOfConfig maps a MultiClusterConfig to the checks naming it.
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

// Reconcile sets the Active condition of one check of
// berth.dev/multicluster.
func (r *CheckReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ac := &berthv1alpha1.AdmissionCheck{}
	if err := r.client.Get(ctx, req.NamespacedName, ac); err != nil || ac.Spec.ControllerName != berthv1alpha1.MultiClusterControllerName {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cfg, why, err := configOf(ctx, r.client, ac)
	if err != nil {
		return ctrl.Result{}, err
	}
	cond := metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonReady, ObservedGeneration: ac.Generation}
	if why != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, berthv1alpha1.ReasonBadParameters, why
	} else {
		cond.Message = fmt.Sprintf("Berth dispatches each workload to the worker clusters of MultiClusterConfig %s", cfg.Name)
	}
	if !meta.SetStatusCondition(&ac.Status.Conditions, cond) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.client.Status().Update(ctx, ac)
}

// configOf reads the MultiClusterConfig of ac, or says why it cannot.
func configOf(ctx context.Context, c client.Reader, ac *berthv1alpha1.AdmissionCheck) (*berthv1alpha1.MultiClusterConfig, string, error) {
	p := ac.Spec.Parameters
	switch {
	case p == nil:
		return nil, "spec.parameters must name a MultiClusterConfig (apiGroup berth.dev)", nil
	case p.APIGroup != berthv1alpha1.GroupVersion.Group || p.Kind != "MultiClusterConfig":
		return nil, fmt.Sprintf("spec.parameters names %s of %s; want a MultiClusterConfig of berth.dev", p.Kind, p.APIGroup), nil
	}
	cfg := &berthv1alpha1.MultiClusterConfig{}
	if err := c.Get(ctx, types.NamespacedName{Name: p.Name}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("MultiClusterConfig %s named in spec.parameters does not exist", p.Name), nil
		}
		return nil, "", err
	}
	return cfg, "", nil
}
