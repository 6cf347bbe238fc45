package multicluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// The rate of the requests to one worker.
const (
	workerQPS   = 100
	workerBurst = 200
)

// errNotStarted: the manager has not started the workers' connections.
var errNotStarted = errors.New("the manager has not started the worker connections yet")

// worker is one connected worker cluster: a client for its writes and a
// cache of the copies made there by this manager (the objects with its
// origin label), whose every change wakes the manager Workload they are
// a copy of.
type worker struct {
	name       string
	kubeconfig []byte
	client     client.Client
	cache      cache.Cache
	// kinds are the kinds of job the worker serves.
	kinds  []*kind
	synced atomic.Bool
	stop   context.CancelFunc
}

// serves reports whether the worker serves k.
func (w *worker) serves(k *kind) bool {
	for _, s := range w.kinds {
		if s == k {
			return true
		}
	}
	return false
}

// workers are the connected worker clusters, by name. It is a runnable of
// the manager: the workers' caches run in its context.
type workers struct {
	scheme *runtime.Scheme
	origin string
	// events wake the dispatcher for one manager Workload.
	events chan event.GenericEvent
	// poke wakes the dispatcher for every manager Workload that waits on
	// or runs through a worker.
	poke func(context.Context)

	mu      sync.RWMutex
	ctx     context.Context
	started chan struct{}
	byName  map[string]*worker
}

func newWorkers(scheme *runtime.Scheme, origin string) *workers {
	return &workers{
		scheme: scheme, origin: origin, events: make(chan event.GenericEvent, 1024),
		started: make(chan struct{}), byName: map[string]*worker{},
	}
}

// Start runs until ctx ends, then stops every worker's cache.
func (ws *workers) Start(ctx context.Context) error {
	ws.mu.Lock()
	ws.ctx = ctx
	close(ws.started)
	ws.mu.Unlock()
	<-ctx.Done()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for name, w := range ws.byName {
		w.stop()
		delete(ws.byName, name)
	}
	return nil
}

// NeedLeaderElection reports true: only the leader dispatches.
func (ws *workers) NeedLeaderElection() bool { return true }

// get is the worker named name when it is connected and its cache synced.
func (ws *workers) get(name string) *worker {
	ws.mu.RLock()
	defer ws.mu.RUnlock()
	if w := ws.byName[name]; w != nil && w.synced.Load() {
		return w
	}
	return nil
}

// connected are the workers whose caches are synced.
func (ws *workers) connected() []*worker {
	ws.mu.RLock()
	defer ws.mu.RUnlock()
	out := make([]*worker, 0, len(ws.byName))
	for _, w := range ws.byName {
		if w.synced.Load() {
			out = append(out, w)
		}
	}
	return out
}

// connect connects the worker name with kubeconfig, unless it is with
// the same one already.
func (ws *workers) connect(name string, kubeconfig []byte) error {
	select {
	case <-ws.started:
	default:
		return errNotStarted
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.byName[name]; w != nil {
		if bytes.Equal(w.kubeconfig, kubeconfig) {
			return nil
		}
		w.stop()
		delete(ws.byName, name)
	}
	w, err := ws.newWorker(name, kubeconfig)
	if err != nil {
		return err
	}
	ws.byName[name] = w
	ctx, stop := context.WithCancel(ws.ctx)
	w.stop = stop
	go func() {
		if err := w.cache.Start(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "The worker's cache stopped", "worker", name)
		}
	}()
	go func() {
		if w.cache.WaitForCacheSync(ctx) {
			w.synced.Store(true)
			ws.poke(ctx)
		}
	}()
	return nil
}

// disconnect stops the worker name's cache; the workloads it runs are
// woken to count the time it is lost.
func (ws *workers) disconnect(ctx context.Context, name string) {
	ws.mu.Lock()
	w := ws.byName[name]
	delete(ws.byName, name)
	ws.mu.Unlock()
	if w != nil {
		w.stop()
		ws.poke(ctx)
	}
}

// newWorker makes the client and cache of a worker; the cache holds only
// this manager's copies, and the kinds the worker serves.
func (ws *workers) newWorker(name string, kubeconfig []byte) (*worker, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	// client-go's default, 5 requests a second, would let a burst of
	// admissions reach a worker at 2 a second: each makes a copy there and
	// deletes it from the others.
	cfg.QPS, cfg.Burst = workerQPS, workerBurst
	c, err := client.New(cfg, client.Options{Scheme: ws.scheme})
	if err != nil {
		return nil, fmt.Errorf("client of worker %s: %w", name, err)
	}
	mine := labels.SelectorFromSet(labels.Set{berthv1alpha1.MultiClusterOriginLabel: ws.origin})
	cc, err := cache.New(cfg, cache.Options{Scheme: ws.scheme, Mapper: c.RESTMapper(), DefaultLabelSelector: mine})
	if err != nil {
		return nil, fmt.Errorf("cache of worker %s: %w", name, err)
	}
	w := &worker{name: name, kubeconfig: kubeconfig, client: c, cache: cc}
	ctx := context.Background()
	wlInformer, err := cc.GetInformer(ctx, &berthv1alpha1.Workload{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("worker %s does not serve Berth's Workloads: %w", name, err)
	}
	if _, err := wlInformer.AddEventHandler(ws.handler(ws.ownerWorkload(w))); err != nil {
		return nil, err
	}
	for i := range kinds {
		k := &kinds[i]
		inf, err := cc.GetInformer(ctx, k.newObject(), cache.BlockUntilSynced(false))
		if meta.IsNoMatchError(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("informer of %s in worker %s: %w", k.gvk.Kind, name, err)
		}
		if _, err := inf.AddEventHandler(ws.handler(managerWorkload)); err != nil {
			return nil, err
		}
		w.kinds = append(w.kinds, k)
	}
	return w, nil
}

// managerWorkload is the manager Workload a copy of a job was made for.
func managerWorkload(obj client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetAnnotations()[berthv1alpha1.MultiClusterWorkloadAnnotation]}
}

// ownerWorkload maps a worker's Workload to the manager Workload of the
// copies that own it: a Job or a JobSet, or the pods of a group.
func (ws *workers) ownerWorkload(w *worker) func(client.Object) types.NamespacedName {
	return func(obj client.Object) types.NamespacedName {
		for _, ref := range obj.GetOwnerReferences() {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err != nil {
				continue
			}
			k := kindOf(gv.WithKind(ref.Kind))
			if k == nil {
				continue
			}
			c := k.newObject()
			if err := w.cache.Get(context.Background(), types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, c); err == nil {
				return managerWorkload(c)
			}
		}
		return types.NamespacedName{}
	}
}

// handler sends the manager Workload of every changed object to the
// dispatcher.
func (ws *workers) handler(of func(client.Object) types.NamespacedName) toolscache.ResourceEventHandler {
	send := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		key := of(o)
		if key.Name == "" {
			return
		}
		ws.events <- event.GenericEvent{Object: &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send(obj) },
		UpdateFunc: func(_, obj any) { send(obj) },
		DeleteFunc: send,
	}
}
