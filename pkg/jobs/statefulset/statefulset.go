package statefulset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/jobs/pod"
)

// +kubebuilder:webhook:path=/mutate-apps-v1-statefulset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=statefulsets,verbs=create;update,versions=v1,name=mstatefulset.berth.dev,admissionReviewVersions=v1

func init() {
	pod.RegisterGroupOwner(owner)
	jobframework.Register(&jobframework.Integration{
		Name:        configv1alpha1.FrameworkStatefulSet,
		GVK:         appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		AddToScheme: appsv1.AddToScheme,
		Setup: func(mgr ctrl.Manager, opts jobframework.Options) error {
			l := labeler{client: jobframework.WebhookReader(mgr), opts: opts}
			return ctrl.NewWebhookManagedBy(mgr, &appsv1.StatefulSet{}).WithDefaulter(l).Complete()
		},
	})
}

// labeler hands the StatefulSet's queue and priority labels down to its pod
// template, and puts its pods in one group, named after it. The group label
// is set once: a change of the template rolls the StatefulSet out. A new
// StatefulSet without a queue gets its namespace's default LocalQueue.
type labeler struct {
	client client.Reader
	opts   jobframework.Options
}

var _ admission.Defaulter[*appsv1.StatefulSet] = labeler{}

// Default labels the template.
func (l labeler) Default(ctx context.Context, sts *appsv1.StatefulSet) error {
	if sts == nil {
		return fmt.Errorf("no StatefulSet in the request")
	}
	// A held LeaderWorkerSet's StatefulSets (the leaders', controlled by
	// the LeaderWorkerSet, and each group's workers', by its leader pod)
	// are left as they are: their pods carry its queue and join its
	// groups. A controller reference names anything else, or a template
	// without the queue, lets none skip its queue.
	held, err := l.opts.HeldOwner(ctx, l.client, sts)
	if err != nil {
		return err
	}
	if held && sts.Spec.Template.Labels[berthv1alpha1.QueueNameLabel] != "" {
		return nil
	}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		if err := l.opts.DefaultQueueOnAdmission(ctx, l.client, req, sts); err != nil {
			return err
		}
	}
	jobframework.HandDownLabels(sts.Labels, &sts.Spec.Template.Labels)
	if sts.Labels[berthv1alpha1.QueueNameLabel] == "" {
		return nil
	}
	if _, ok := sts.Spec.Template.Labels[berthv1alpha1.PodGroupNameLabel]; !ok {
		sts.Spec.Template.Labels[berthv1alpha1.PodGroupNameLabel] = jobframework.LabelValue(sts.Name)
	}
	return nil
}
