package jobframework

import (
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/util/shutdown"
	"github.com/berth-dev/berth/pkg/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Options configures the job reconcilers and webhooks.
type Options struct {
	// ManageJobsWithoutQueueName makes Berth hold jobs without the queue
	// label too.
	ManageJobsWithoutQueueName bool
	// DefaultSchedulerName is the scheduler of admitted pods when their
	// ClusterQueue names none.
	DefaultSchedulerName string
	// Writer writes the status of the jobs' Workloads.
	Writer workloadwriter.Writer
	// Backoff is how long a workload evicted because its pods were not
	// ready waits before it is queued again.
	Backoff workload.Backoff
	// ControllerUsername is the user the controller acts as. The job
	// webhooks do not check the controller's own writes.
	ControllerUsername string
	// PodNamespaces selects, by their labels, the namespaces whose queued
	// pods Berth holds; nil selects every namespace.
	PodNamespaces labels.Selector
}

// SetupWithManager registers the integration's reconciler and webhook.
func (i *Integration) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if i.Setup != nil {
		return i.Setup(mgr, opts)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(i.GVK.Group + "-" + i.GVK.Kind).
		For(i.NewJob().Object()).
		Owns(&berthv1alpha1.Workload{}).
		Complete(shutdown.UntilStopped(&JobReconciler{
			client: mgr.GetClient(), writer: opts.Writer, recorder: mgr.GetEventRecorder("berth-controller"), integration: i,
			manageWithoutQueueName: opts.ManageJobsWithoutQueueName, backoff: opts.Backoff,
		}))
	if err != nil {
		return err
	}
	hook := ctrl.NewWebhookManagedBy(mgr, i.NewJob().Object())
	//nolint:staticcheck // the typed Defaulter and Validator cannot decode into an interface type: see defaulter
	return hook.WithCustomDefaulter(&defaulter{client: mgr.GetClient(), integration: i, opts: opts}).
		WithCustomValidator(&validator{client: mgr.GetClient(), integration: i, opts: opts}).Complete()
}
