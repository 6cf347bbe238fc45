package auditor

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/audit"
)

const (
	// minGap is the least time between two audits: events only make the
	// next one come sooner.
	minGap = 5 * time.Second
	// resync is the most time between two audits.
	resync = 30 * time.Second
)

// Options configures the auditor.
type Options struct {
	// Queued is the cache of the pods with the queue label that the
	// manager's cache leaves out: those without berth.dev/managed.
	Queued ctrlcache.Cache
	// Namespaces selects, by their labels, the namespaces whose queued pods
	// Berth holds (the pod integration's namespace selector); nil selects
	// every namespace.
	Namespaces labels.Selector
	// Recorder records the events.
	Recorder events.EventRecorder
}

// Auditor is the controller's quota audit; see the package comment.
type Auditor struct {
	// The stores of the informers it reads: the pods of the manager's
	// cache and of Options.Queued, and the others of the manager's cache.
	managedPods, queuedPods                           toolscache.Store
	workloads, localQueues, clusterQueues, namespaces toolscache.Store
	synced                                            func(context.Context) bool
	namespaceSelector                                 labels.Selector
	memo                                              *audit.Memo
	teller                                            *teller
	// wake holds a request for an audit, made by an event.
	wake chan struct{}
}

var (
	_ manager.Runnable               = (*Auditor)(nil)
	_ manager.LeaderElectionRunnable = (*Auditor)(nil)
)

// Setup adds an Auditor to mgr: it runs on the leader.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	a := &Auditor{
		synced:            opts.Queued.WaitForCacheSync,
		namespaceSelector: opts.Namespaces,
		memo:              audit.NewMemo(),
		teller:            newTeller(opts.Recorder),
		wake:              make(chan struct{}, 1),
	}
	poke := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.poke() },
		UpdateFunc: func(any, any) { a.poke() },
		DeleteFunc: func(any) { a.poke() },
	}
	for _, src := range []struct {
		cache ctrlcache.Informers
		obj   client.Object
		store *toolscache.Store
		wakes bool
	}{
		{mgr.GetCache(), &corev1.Pod{}, &a.managedPods, true},
		{opts.Queued, &corev1.Pod{}, &a.queuedPods, true},
		{mgr.GetCache(), &berthv1alpha1.Workload{}, &a.workloads, true},
		{mgr.GetCache(), &berthv1alpha1.LocalQueue{}, &a.localQueues, false},
		{mgr.GetCache(), &berthv1alpha1.ClusterQueue{}, &a.clusterQueues, false},
		{mgr.GetCache(), &corev1.Namespace{}, &a.namespaces, false},
	} {
		inf, err := src.cache.GetInformer(ctx, src.obj)
		if err != nil {
			return fmt.Errorf("the audit's informer of %T: %w", src.obj, err)
		}
		withStore, ok := inf.(interface{ GetStore() toolscache.Store })
		if !ok {
			return fmt.Errorf("the informer of %T (%T) has no store", src.obj, inf)
		}
		*src.store = withStore.GetStore()
		if src.wakes {
			if _, err := inf.AddEventHandler(poke); err != nil {
				return err
			}
		}
	}
	return mgr.Add(a)
}

// NeedLeaderElection is true: only the leader tells.
func (a *Auditor) NeedLeaderElection() bool { return true }

// poke asks for an audit, without waiting: one asked for is enough.
func (a *Auditor) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Start audits until ctx ends: after an event, but not sooner than minGap
// after the last audit, and at least every resync.
func (a *Auditor) Start(ctx context.Context) error {
	if !a.synced(ctx) {
		return nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithName("audit"))
	for {
		a.audit(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(minGap):
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		case <-time.After(resync - minGap):
		}
	}
}

// audit compares what the caches hold now, and tells what it found.
func (a *Auditor) audit(ctx context.Context) {
	start := time.Now()
	report := audit.Compare(audit.Input{
		Pods:        podsOf(a.queuedPods, a.managedPods),
		Workloads:   objects[berthv1alpha1.Workload](a.workloads),
		LocalQueues: objects[berthv1alpha1.LocalQueue](a.localQueues),
		Managed:     a.managed(),
		Memo:        a.memo,
	})
	a.teller.tell(ctx, report, objects[berthv1alpha1.ClusterQueue](a.clusterQueues))
	ctrl.LoggerFrom(ctx).V(3).Info("Audited", "clusterQueuesWithFindings", len(report.ClusterQueues), "took", time.Since(start))
}

// managed is whether Berth holds the queued pods of a namespace, by its
// labels as the cache holds them now.
func (a *Auditor) managed() func(string) bool {
	if a.namespaceSelector == nil {
		return nil
	}
	selected := map[string]bool{}
	for _, ns := range objects[corev1.Namespace](a.namespaces) {
		selected[ns.Name] = a.namespaceSelector.Matches(labels.Set(ns.Labels))
	}
	return func(ns string) bool { return selected[ns] }
}

// podsOf is the pods of both stores. A pod whose labels just moved it
// from one to the other may be in both for a moment: it is counted once.
// queued holds few pods, or none.
func podsOf(queued, managed toolscache.Store) []*corev1.Pod {
	out := objects[corev1.Pod](queued)
	inQueued := make(map[types.UID]bool, len(out))
	for _, p := range out {
		inQueued[p.UID] = true
	}
	for _, p := range objects[corev1.Pod](managed) {
		if !inQueued[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

// objects is what store holds, the informer's own objects: read them,
// never change them.
func objects[T any](store toolscache.Store) []*T {
	list := store.List()
	out := make([]*T, 0, len(list))
	for _, o := range list {
		if t, ok := o.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}
