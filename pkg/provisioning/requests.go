package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/util/shutdown"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// RequestReconciler makes the ProvisioningRequests of the workloads that
// wait on a check of Berth's, and turns their conditions into the checks'
// states.
type RequestReconciler struct {
	client client.Client
	writer workloadwriter.Writer
}

// SetupWithManager registers the reconciler with mgr: it follows
// Workloads and the ProvisioningRequests they own.
func (r *RequestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("provisioning-request").For(&berthv1alpha1.Workload{}, builder.WithPredicates(withChecks)).
		Watches(&autoscalingv1.ProvisioningRequest{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &berthv1alpha1.Workload{})).
		Complete(shutdown.UntilStopped(r))
}

// withChecks passes the events of workloads that have admission checks or
// just lost them: the others have no request to make or delete.
var withChecks = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return hasChecks(e.Object) },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(e event.GenericEvent) bool { return hasChecks(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return hasChecks(e.ObjectOld) || hasChecks(e.ObjectNew) },
}

func hasChecks(obj client.Object) bool {
	wl, ok := obj.(*berthv1alpha1.Workload)
	return ok && len(wl.Status.AdmissionChecks) > 0
}

// Reconcile handles the checks of Berth's of one workload.
func (r *RequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wl := &berthv1alpha1.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, wl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if workload.IsFinished(wl) || !wl.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.deleteRequests(ctx, wl, func(*autoscalingv1.ProvisioningRequest) bool { return true })
	}
	if !workload.HasQuotaReservation(wl) {
		// Back in the queue: the capacity booked for the lost reservation
		// goes back; failed requests stay, as the count of attempts.
		return ctrl.Result{}, r.deleteRequests(ctx, wl, func(pr *autoscalingv1.ProvisioningRequest) bool { return !isTrue(pr, autoscalingv1.Failed) })
	}
	for _, st := range wl.Status.AdmissionChecks {
		ac := &berthv1alpha1.AdmissionCheck{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: string(st.Name)}, ac); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return ctrl.Result{}, err
		}
		if ac.Spec.ControllerName != berthv1alpha1.ProvisioningRequestControllerName || st.State == berthv1alpha1.CheckStateRetry || st.State == berthv1alpha1.CheckStateRejected {
			continue
		}
		next, err := r.follow(ctx, wl, ac)
		if err != nil {
			return ctrl.Result{}, err
		}
		if next == nil {
			continue
		}
		if _, err := workloadwriter.Apply(ctx, r.writer, wl, func(w *berthv1alpha1.Workload) bool { return workload.SetCheckState(w, *next) }); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// requestName is the name of the request of wl's current reservation for
// check: the same for as long as the reservation lasts, a new one after
// each requeue. It leaves room for a podset's name after it in the names
// of the request's PodTemplates (253 characters).
func requestName(wl *berthv1alpha1.Workload, check string) string {
	attempt := int32(1)
	if rs := wl.Status.RequeueState; rs != nil {
		attempt += ptr.Deref(rs.Count, 0)
	}
	const maxPodSetName = 63
	return jobframework.FitName(fmt.Sprintf("%s-%s-%d", wl.Name, check, attempt), validation.DNS1123SubdomainMaxLength-1-maxPodSetName)
}

// follow makes the request of wl's reservation for ac if it is not made,
// and returns the check's state its conditions say (nil for no change
// needed beyond what was written).
func (r *RequestReconciler) follow(ctx context.Context, wl *berthv1alpha1.Workload, ac *berthv1alpha1.AdmissionCheck) (*berthv1alpha1.AdmissionCheckState, error) {
	name := berthv1alpha1.AdmissionCheckReference(ac.Name)
	cfg, why, err := configOf(ctx, r.client, ac)
	if err != nil {
		return nil, err
	}
	if why != "" {
		return &berthv1alpha1.AdmissionCheckState{Name: name, State: berthv1alpha1.CheckStatePending, Message: why}, nil
	}
	if len(requested(wl, cfg)) == 0 {
		return &berthv1alpha1.AdmissionCheckState{Name: name, State: berthv1alpha1.CheckStateReady, Message: fmt.Sprintf(
			"No podset asks for a resource of ProvisioningRequestConfig %s's managedResources (%s): no ProvisioningRequest is needed", cfg.Name, resourceNames(cfg.Spec.ManagedResources))}, nil
	}
	pr := &autoscalingv1.ProvisioningRequest{}
	prName := requestName(wl, ac.Name)
	err = r.client.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: prName}, pr)
	if apierrors.IsNotFound(err) {
		if err := r.create(ctx, wl, ac.Name, prName, cfg); err != nil {
			return nil, err
		}
		return &berthv1alpha1.AdmissionCheckState{Name: name, State: berthv1alpha1.CheckStatePending,
			Message: fmt.Sprintf("ProvisioningRequest %s created; waiting for the capacity", prName)}, nil
	} else if err != nil {
		return nil, err
	}
	failed := 0
	if isTrue(pr, autoscalingv1.Failed) {
		if failed, err = r.failures(ctx, wl, ac.Name); err != nil {
			return nil, err
		}
	}
	return checkState(wl, name, pr, cfg, failed), nil
}

// failures counts the failed requests of wl for check.
func (r *RequestReconciler) failures(ctx context.Context, wl *berthv1alpha1.Workload, check string) (int, error) {
	prs := &autoscalingv1.ProvisioningRequestList{}
	if err := r.client.List(ctx, prs, client.InNamespace(wl.Namespace), client.MatchingLabels{berthv1alpha1.WorkloadLabel: wl.Name, berthv1alpha1.AdmissionCheckLabel: jobframework.LabelValue(check)}); err != nil {
		return 0, err
	}
	n := 0
	for i := range prs.Items {
		if isTrue(&prs.Items[i], autoscalingv1.Failed) {
			n++
		}
	}
	return n, nil
}

// create makes the request and its PodTemplates: one per requested podset
// (see requestPodSets), as the pods will run (the flavors' node labels and
// tolerations added), for as many pods as the reservation holds.
func (r *RequestReconciler) create(ctx context.Context, wl *berthv1alpha1.Workload, check, name string, cfg *berthv1alpha1.ProvisioningRequestConfig) error {
	infos, err := jobframework.AdmittedPodSets(ctx, r.client, wl)
	if err != nil {
		return err
	}
	labels := map[string]string{berthv1alpha1.WorkloadLabel: wl.Name, berthv1alpha1.AdmissionCheckLabel: jobframework.LabelValue(check)}
	pr := &autoscalingv1.ProvisioningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: wl.Namespace, Labels: labels},
		Spec:       autoscalingv1.ProvisioningRequestSpec{ProvisioningClassName: cfg.Spec.ProvisioningClassName},
	}
	if len(cfg.Spec.Parameters) > 0 {
		pr.Spec.Parameters = map[string]autoscalingv1.Parameter{}
		for k, v := range cfg.Spec.Parameters {
			pr.Spec.Parameters[k] = autoscalingv1.Parameter(v)
		}
	}
	for _, ps := range requestPodSets(wl, infos, cfg, labels) {
		// Named after its first podset: a merged one's others share it.
		pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ps.podSets[0], Namespace: wl.Namespace, Labels: labels}, Template: ps.template}
		if err := controllerutil.SetControllerReference(wl, pt, r.client.Scheme()); err != nil {
			return err
		}
		if err := r.client.Create(ctx, pt); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating PodTemplate %s: %w", pt.Name, err)
		}
		pr.Spec.PodSets = append(pr.Spec.PodSets, autoscalingv1.PodSet{PodTemplateRef: autoscalingv1.Reference{Name: pt.Name}, Count: ps.count})
	}
	if err := controllerutil.SetControllerReference(wl, pr, r.client.Scheme()); err != nil {
		return err
	}
	if err := r.client.Create(ctx, pr); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating ProvisioningRequest %s: %w", name, err)
	}
	return nil
}

// deleteRequests deletes the requests of wl that drop selects, with their
// PodTemplates.
func (r *RequestReconciler) deleteRequests(ctx context.Context, wl *berthv1alpha1.Workload, drop func(*autoscalingv1.ProvisioningRequest) bool) error {
	prs := &autoscalingv1.ProvisioningRequestList{}
	if err := r.client.List(ctx, prs, client.InNamespace(wl.Namespace), client.MatchingLabels{berthv1alpha1.WorkloadLabel: wl.Name}); err != nil {
		return err
	}
	for i := range prs.Items {
		pr := &prs.Items[i]
		if !drop(pr) {
			continue
		}
		for _, ps := range pr.Spec.PodSets {
			pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: pr.Namespace, Name: ps.PodTemplateRef.Name}}
			if err := r.client.Delete(ctx, pt); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if err := r.client.Delete(ctx, pr); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
