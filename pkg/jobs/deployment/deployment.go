package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// +kubebuilder:webhook:path=/mutate-apps-v1-deployment,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=mdeployment.berth.dev,admissionReviewVersions=v1

func init() {
	jobframework.Register(&jobframework.Integration{
		Name:        configv1alpha1.FrameworkDeployment,
		GVK:         appsv1.SchemeGroupVersion.WithKind("Deployment"),
		AddToScheme: appsv1.AddToScheme,
		Setup: func(mgr ctrl.Manager, opts jobframework.Options) error {
			l := labeler{client: jobframework.WebhookReader(mgr), opts: opts}
			return ctrl.NewWebhookManagedBy(mgr, &appsv1.Deployment{}).WithDefaulter(l).Complete()
		},
	})
}

// labeler keeps the pod template's queue and priority labels those of the
// Deployment: set when the Deployment has them, removed when it has not.
// A change rolls the Deployment out, and its new pods queue where it says.
// A new Deployment without a queue gets its namespace's default LocalQueue.
type labeler struct {
	client client.Reader
	opts   jobframework.Options
}

var _ admission.Defaulter[*appsv1.Deployment] = labeler{}

// Default hands the labels down.
func (l labeler) Default(ctx context.Context, d *appsv1.Deployment) error {
	if d == nil {
		return fmt.Errorf("no Deployment in the request")
	}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		if err := l.opts.DefaultQueueOnAdmission(ctx, l.client, req, d); err != nil {
			return err
		}
	}
	jobframework.HandDownLabels(d.Labels, &d.Spec.Template.Labels)
	return nil
}
