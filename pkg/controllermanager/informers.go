package controllermanager

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/certs"
	"github.com/berth-dev/berth/pkg/engine/audit"
	"github.com/berth-dev/berth/pkg/fastwatch"
)

// CacheOptions is how Berth's manager caches objects: with the watches of
// pkg/fastwatch for the kinds that change most.
func CacheOptions(cfg *rest.Config, scheme *runtime.Scheme, scope Scope) (cache.Options, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return cache.Options{}, err
	}
	// Workloads change several times each within seconds of a busy
	// cluster, and every queue's status is rewritten every few seconds
	// while its counts change, each write coming back as an event: their
	// watches decode in one pass, and skip the managed fields the
	// transform below would drop. The Workloads of a sweep of jobs made
	// from one template hold one pod spec between them.
	newInformer, err := fastwatch.NewInformer(cfg, httpClient, scheme,
		fastwatch.Sharing[corev1.PodSpec](fastwatch.For[berthv1alpha1.Workload]("workloads").WithoutManagedFields(), sharedPodSpecs),
		fastwatch.For[berthv1alpha1.ClusterQueue]("clusterqueues").WithoutManagedFields(),
		fastwatch.For[berthv1alpha1.LocalQueue]("localqueues").WithoutManagedFields())
	if err != nil {
		return cache.Options{}, err
	}
	return cache.Options{
		Scheme:     scheme,
		HTTPClient: httpClient,
		// Nothing reads managed fields; without them every cached object,
		// thousands of Workloads among them, is a good deal smaller. An
		// update that omits them keeps them on the server.
		DefaultTransform: cache.TransformStripManagedFields(),
		NewInformer:      newInformer,
		ByObject:         scope.byObject(),
	}, nil
}

// sharedPodSpecs is how many pod specs the Workloads' watch remembers, to
// share among the Workloads that hold the same one.
const sharedPodSpecs = 1024

// Scope names the objects of kinds that Berth reads only one of: the
// webhook configurations it writes its CA bundle into.
type Scope struct {
	ValidatingWebhookConfiguration, MutatingWebhookConfiguration string
	// APIService is the visibility API's, whose CA bundle Berth writes.
	APIService string
}

// byObject restricts what the cache holds of kinds that Berth reads only
// in part: of the pods, those Berth holds or runs, which carry the managed
// label (quota is released when they are gone; the quota audit reads the
// queued pods without it from a cache of its own, QueuedPodsCache); of the
// StatefulSets, the
// queued ones, whose replicas are their pod groups' sizes; of the webhook
// configurations, its own, listed and watched by name so that its role may
// name them (resourceNames).
func (s Scope) byObject() map[client.Object]cache.ByObject {
	managed, err := labels.NewRequirement(berthv1alpha1.ManagedLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	queued, err := labels.NewRequirement(berthv1alpha1.QueueNameLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	out := map[client.Object]cache.ByObject{
		&corev1.Pod{}:         {Label: labels.NewSelector().Add(*managed)},
		&appsv1.StatefulSet{}: {Label: labels.NewSelector().Add(*queued)},
	}
	if s.ValidatingWebhookConfiguration != "" {
		out[&admissionregistrationv1.ValidatingWebhookConfiguration{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", s.ValidatingWebhookConfiguration)}
	}
	if s.APIService != "" {
		out[certs.APIServiceMetadata()] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", s.APIService)}
	}
	if s.MutatingWebhookConfiguration != "" {
		out[&admissionregistrationv1.MutatingWebhookConfiguration{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", s.MutatingWebhookConfiguration)}
	}
	return out
}

// QueuedPodsCache is a cache of the pods that the manager's cache leaves
// out and the quota audit (pkg/auditor) must see: those that name a
// LocalQueue (berth.dev/queue-name) and carry no berth.dev/managed, having
// escaped Berth's webhook. The API server selects them, so that neither
// cache holds a pod twice nor every pod of the cluster, and its watch
// carries no event while all is well.
func QueuedPodsCache(mgr manager.Manager) (cache.Cache, error) {
	_, queued := audit.PodSelectors()
	return cache.New(mgr.GetConfig(), cache.Options{
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		HTTPClient:       mgr.GetHTTPClient(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: queued}},
	})
}
