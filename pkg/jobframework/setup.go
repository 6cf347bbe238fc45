package jobframework

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/util/shutdown"
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
	// ManagedNamespaces selects, by their labels, the namespaces whose jobs
	// without the queue label Berth takes (see DefaultQueue); nil selects
	// every namespace.
	ManagedNamespaces labels.Selector
	// Frameworks are the names of the enabled integrations.
	Frameworks []string
}

// Enables reports whether the integration named name is enabled.
func (o Options) Enables(name string) bool { return slices.Contains(o.Frameworks, name) }

// requestOfJob is the request of the job obj belongs to: the composed job
// its group label names, or itself.
func (i *Integration) requestOfJob(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetName()
	if group := obj.GetLabels()[i.GroupLabel]; group != "" {
		name = groupRequest + group
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// requestOfWorkload is the request of the job a Workload belongs to: the
// composed job its group label names, or the job of the kind that
// controls it.
func (i *Integration) requestOfWorkload(_ context.Context, obj client.Object) []reconcile.Request {
	if group := obj.GetLabels()[i.GroupLabel]; group != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: groupRequest + group}}}
	}
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != i.GVK.Kind || owner.APIVersion != i.GVK.GroupVersion().String() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: owner.Name}}}
}

// changed are the predicates of the watch of the kind's objects: its
// Changed, if it has one.
func (i *Integration) changed() []predicate.Predicate {
	if i.Changed == nil {
		return nil
	}
	return []predicate.Predicate{i.Changed}
}

// SetupWithManager registers the integration's reconciler and webhook.
func (i *Integration) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if i.Setup != nil {
		return i.Setup(mgr, opts)
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(i.GVK.Group + "-" + i.GVK.Kind)
	if i.GroupLabel == "" {
		b = b.For(i.NewJob().Object(), builder.WithPredicates(i.changed()...)).Owns(&berthv1alpha1.Workload{})
		if _, ok := i.NewJob().(ElasticJob); ok {
			b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(i.requestOfElasticPod), builder.WithPredicates(elasticPodChanged))
		}
	} else {
		b = b.Watches(i.NewJob().Object(), handler.EnqueueRequestsFromMapFunc(i.requestOfJob), builder.WithPredicates(i.changed()...)).
			Watches(&berthv1alpha1.Workload{}, handler.EnqueueRequestsFromMapFunc(i.requestOfWorkload))
		for _, src := range i.GroupSources {
			b = b.Watches(src.Object, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
				group := src.GroupOf(obj)
				if group == "" {
					return nil
				}
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: groupRequest + group}}}
			}))
		}
	}
	err := b.Complete(shutdown.UntilStopped(&JobReconciler{
		client: mgr.GetClient(), reader: WebhookReader(mgr), live: mgr.GetAPIReader(), writer: opts.Writer, recorder: mgr.GetEventRecorder("berth-controller"), integration: i,
		opts: opts, backoff: opts.Backoff,
	}))
	if err != nil {
		return err
	}
	hook := ctrl.NewWebhookManagedBy(mgr, i.NewJob().Object())
	reader := WebhookReader(mgr)
	//nolint:staticcheck // the typed Defaulter and Validator cannot decode into an interface type: see defaulter
	return hook.WithCustomDefaulter(&defaulter{client: reader, integration: i, opts: opts}).
		WithCustomValidator(&validator{client: reader, integration: i, opts: opts}).Complete()
}

// WebhookReader is the reader a webhook judges an object with: a
// freshReader of mgr's cache and API server. A webhook that read the cache
// alone would take an object created a moment before for absent (the
// leader pod that controls a LeaderWorkerSet group's worker StatefulSet),
// and judge the new object as a part of no job.
func WebhookReader(mgr ctrl.Manager) client.Reader {
	return freshReader{cached: mgr.GetClient(), live: mgr.GetAPIReader()}
}

// freshReader reads from the manager's cache, and from the API server what
// the cache does not hold: the webhooks judge objects as they are created,
// which may name another created a moment before (a JobSet's Job, the owner
// of the pods it makes at once), and a miss must not be taken for absence.
type freshReader struct {
	cached, live client.Reader
}

// Get reads key from the cache, or from the API server when the cache does
// not have it.
func (r freshReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.cached.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) {
		return r.live.Get(ctx, key, obj, opts...)
	}
	return err
}

// GetLive reads key from the API server when c is a reader that reads
// through a cache to it (the webhooks' and the job reconcilers'), from c
// otherwise: for what a cache may not hold yet, such as a status written a
// moment before the object that it names.
func GetLive(ctx context.Context, c client.Reader, key client.ObjectKey, obj client.Object) error {
	if f, ok := c.(freshReader); ok {
		return f.live.Get(ctx, key, obj)
	}
	return c.Get(ctx, key, obj)
}

// List lists from the cache.
func (r freshReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.cached.List(ctx, list, opts...)
}
