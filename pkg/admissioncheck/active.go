package admissioncheck

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

// ActiveReconciler sets the Active condition of the AdmissionChecks of one
// controller.
type ActiveReconciler struct {
	Client client.Client
	// ControllerName is the checks' spec.controllerName.
	ControllerName string
	// Kind is the kind of the checks' parameters, of berth.dev.
	Kind string
	// NewParameters makes an empty object of Kind.
	NewParameters func() client.Object
	// Check says why a check with these parameters cannot run, "" when it
	// can, and what Active=True says then.
	Check func(params client.Object) (why, ready string)
}

// SetupWithManager registers the reconciler with mgr, as name.
func (r *ActiveReconciler) SetupWithManager(mgr ctrl.Manager, name string) error {
	return ctrl.NewControllerManagedBy(mgr).Named(name).For(&berthv1alpha1.AdmissionCheck{}).
		Watches(r.NewParameters(), handler.EnqueueRequestsFromMapFunc(r.checksOf)).
		Complete(shutdown.UntilStopped(r))
}

// checksOf maps parameters to the checks naming them.
func (r *ActiveReconciler) checksOf(ctx context.Context, obj client.Object) []reconcile.Request {
	checks := &berthv1alpha1.AdmissionCheckList{}
	if err := r.Client.List(ctx, checks); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ac := range checks.Items {
		if p := ac.Spec.Parameters; p != nil && p.Name == obj.GetName() && ac.Spec.ControllerName == r.ControllerName {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ac.Name}})
		}
	}
	return out
}

// Reconcile sets the Active condition of one check.
func (r *ActiveReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ac := &berthv1alpha1.AdmissionCheck{}
	if err := r.Client.Get(ctx, req.NamespacedName, ac); err != nil || ac.Spec.ControllerName != r.ControllerName {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	params := r.NewParameters()
	why, err := Parameters(ctx, r.Client, ac, r.Kind, params)
	if err != nil {
		return ctrl.Result{}, err
	}
	ready := ""
	if why == "" {
		why, ready = r.Check(params)
	}
	cond := metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonReady,
		Message: ready, ObservedGeneration: ac.Generation}
	if why != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, berthv1alpha1.ReasonBadParameters, why
	}
	if !meta.SetStatusCondition(&ac.Status.Conditions, cond) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Client.Status().Update(ctx, ac)
}

// Parameters reads ac's parameters, an object of kind of berth.dev, into
// params, or says why it cannot: ac names none, another kind, or one that
// does not exist.
func Parameters(ctx context.Context, c client.Reader, ac *berthv1alpha1.AdmissionCheck, kind string, params client.Object) (string, error) {
	p := ac.Spec.Parameters
	switch {
	case p == nil:
		return fmt.Sprintf("spec.parameters must name a %s (apiGroup berth.dev)", kind), nil
	case p.APIGroup != berthv1alpha1.GroupVersion.Group || p.Kind != kind:
		return fmt.Sprintf("spec.parameters names %s of %s; want a %s of berth.dev", p.Kind, p.APIGroup, kind), nil
	}
	if err := c.Get(ctx, types.NamespacedName{Name: p.Name}, params); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("%s %s named in spec.parameters does not exist", kind, p.Name), nil
		}
		return "", err
	}
	return "", nil
}
