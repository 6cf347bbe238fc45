package jobframework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Integration is a job framework Berth can admit.
type Integration struct {
	// Name is how the configuration enables it, e.g. "batch/job".
	Name string
	// GVK is the job's kind.
	GVK schema.GroupVersionKind
	// NewJob returns an empty job of the kind, to read into.
	NewJob func() GenericJob
	// Wrap views an object of the kind as a GenericJob.
	Wrap func(client.Object) (GenericJob, error)
	// AddToScheme adds the kind's API to a scheme; nil for a kind Berth
	// reads only as JSON.
	AddToScheme func(*runtime.Scheme) error
	// HoldOnlyAtCreation says that a job of the kind can be held only as
	// it is created: a pod's scheduling gates cannot be added later. One
	// that runs without a Workload is not Berth's, and one that must stop
	// is deleted, for its owner to create it again, held.
	HoldOnlyAtCreation bool
	// Selects reports whether Berth holds a new job of the kind that
	// carries the queue label; nil selects every one. Pods, for example,
	// are held only in the configured namespaces, and only when no other
	// framework runs them.
	Selects func(ctx context.Context, c client.Reader, job client.Object, opts Options) (bool, error)
	// GroupLabel, when set, gathers the objects of the kind that carry
	// it into composed jobs, one for each of its values in a namespace:
	// the pods of a pod group. Their Workloads carry it too.
	GroupLabel string
	// LoadGroup reads the composed job named by a GroupLabel value; nil
	// when no object carries it any more.
	LoadGroup func(ctx context.Context, c client.Reader, namespace, name string) (ComposedJob, error)
	// Changed, when set, passes the updates of the kind's objects that the
	// job reconciler acts on, so that the others cost no reconcile: a
	// running pod's binding and status updates, say. Nil passes every
	// update.
	Changed predicate.Predicate
	// GroupSources are other kinds whose changes change a composed job,
	// such as a StatefulSet, whose replicas are its group's size.
	GroupSources []GroupSource
	// Parts are the kinds of the objects a job of the kind makes that wait
	// with it rather than queue by themselves: a Job's pods, a JobSet's
	// Jobs, a LeaderWorkerSet's StatefulSets. An object of another kind
	// that names such a job as its controller is not a part of it.
	Parts []schema.GroupKind
	// OwnsPart, when set, says whether the job's own controller takes
	// part, an object of one of its Parts that names the job as its
	// controller, for one it made: a Job, the pods its selector matches
	// while it runs. An owner reference is its writer's: an object the
	// controller would release or ignore is not a part, and waits by
	// itself.
	OwnsPart func(owner, part client.Object) bool
	// PartsCarryAdmission says that the job's own controller renders its
	// parts from it (Kubeflow Trainer a TrainJob's JobSet), so that Berth
	// writes the admission into the parts themselves: as a part is created
	// or updated to run, its templates get the admission's labels, node
	// selectors and tolerations, and a part that would run outside its
	// job's admission is refused (see carrier).
	PartsCarryAdmission bool
	// Setup, when set, replaces the job reconciler and webhooks: for a kind
	// whose pods another integration queues, such as a Deployment's, whose
	// webhook only hands its queue label down to its pods. NewJob and Wrap
	// are then nil.
	Setup func(mgr ctrl.Manager, opts Options) error
}

// GroupSource is a kind whose objects change composed jobs.
type GroupSource struct {
	// Object is an empty object of the kind.
	Object client.Object
	// GroupOf names the composed job an object of the kind changes; ""
	// for none.
	GroupOf func(client.Object) string
}

// JobWithPodSpecs is implemented by jobs whose pod specs the webhook may
// default, e.g. with the ClusterQueue's schedulerName.
type JobWithPodSpecs interface {
	// PodSpecs are the specs of the job's pods, to change in place.
	PodSpecs() []*corev1.PodSpec
}

var (
	registryMu sync.Mutex
	registry   = map[string]*Integration{}
	// kinds knows the types of Kubernetes' kinds and of the registered
	// integrations', to tell the kind of a typed object without TypeMeta.
	kinds = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(s))
		return s
	}()
)

// Register makes a framework available. Frameworks call it from an init
// function of their package; cmd/berth imports the packages it ships.
func Register(i *Integration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, ok := registry[i.Name]; ok {
		panic(fmt.Sprintf("job integration %s registered twice", i.Name))
	}
	registry[i.Name] = i
	if i.AddToScheme != nil {
		utilruntime.Must(i.AddToScheme(kinds))
	}
}

// Lookup returns the registered framework with the given name.
func Lookup(name string) (*Integration, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	i, ok := registry[name]
	return i, ok
}

// ForKind returns the registered framework of a job's kind.
func ForKind(gvk schema.GroupVersionKind) (*Integration, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, i := range registry {
		if i.GVK == gvk {
			return i, true
		}
	}
	return nil, false
}

// Names lists the registered frameworks.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Enabled returns the registered frameworks among names, or an error
// naming one that is not registered.
func Enabled(names []string) ([]*Integration, error) {
	var out []*Integration
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		i, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("unknown job integration %q; known: %v", n, Names())
		}
		out = append(out, i)
	}
	return out, nil
}

// selects reports whether Berth holds the new job obj of the kind.
func (i *Integration) selects(ctx context.Context, c client.Reader, obj client.Object, opts Options) (bool, error) {
	// A part that carries its job's admission runs on that job's quota,
	// whatever labels its controller copied onto it.
	if k, err := opts.carrierOf(ctx, c, obj); err != nil || k.owner != nil {
		return false, err
	}
	if i.Selects == nil {
		return true, nil
	}
	return i.Selects(ctx, c, obj, opts)
}

// MetadataChanged reports whether an update changed what a job's owner or
// Berth writes in its metadata: its labels, annotations, owners, or the
// start of its deletion. A Changed predicate passes such updates.
func MetadataChanged(before, after client.Object) bool {
	return !maps.Equal(before.GetLabels(), after.GetLabels()) || !maps.Equal(before.GetAnnotations(), after.GetAnnotations()) ||
		before.GetDeletionTimestamp().IsZero() != after.GetDeletionTimestamp().IsZero() ||
		!equality.Semantic.DeepEqual(before.GetOwnerReferences(), after.GetOwnerReferences())
}

// UpdatesThat is a predicate that passes every creation and deletion of
// an object of type T, and the updates for which changed reports true.
func UpdatesThat[T client.Object](changed func(before, after T) bool) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(T)
			after, ok2 := e.ObjectNew.(T)
			return !ok1 || !ok2 || changed(before, after)
		},
	}
}
