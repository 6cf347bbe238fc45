package audit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// WatchWorkloads feeds handler from a stock client-go informer on
// Workloads, started and synced before it returns; it stops with ctx.
// relisted is told, with the reason, of every time the informer lists the
// Workloads again after its first list, or its watch fails: the versions
// written since the last one shown may then never be shown. The audit
// must not see the Workloads through the code it audits (pkg/fastwatch).
func WatchWorkloads(ctx context.Context, cfg *rest.Config, scheme *k8sruntime.Scheme, handler toolscache.ResourceEventHandler, relisted func(error)) error {
	opts := cache.Options{
		Scheme: scheme,
		// Nothing here reads them, and the runner must not take more of
		// the machine than a job integration would.
		DefaultTransform: cache.TransformStripManagedFields(),
		DefaultWatchErrorHandler: func(ctx context.Context, r *toolscache.Reflector, err error) {
			relisted(err)
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
		},
		// client-go lists again after a watch whose version expired
		// without calling the error handler; the Workloads' lister says
		// so instead.
		NewInformer: func(lw toolscache.ListerWatcher, obj k8sruntime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			if _, ok := obj.(*berthv1alpha1.Workload); ok {
				lw = notifyRelists(lw, relisted)
			}
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		},
	}
	ca, err := cache.New(cfg, opts)
	if err != nil {
		return err
	}
	inf, err := ca.GetInformer(ctx, &berthv1alpha1.Workload{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handler); err != nil {
		return err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return errors.New("the Workload informer did not sync")
	}
	return nil
}

// notifyRelists returns lw calling relisted on every list after the
// first, whether a List or a list streamed as a watch (client-go's
// default): the informer lists again, and the versions written since its
// watch ended may never be shown.
func notifyRelists(lw toolscache.ListerWatcher, relisted func(error)) toolscache.ListerWatcher {
	return &relistNotifier{ListerWatcherWithContext: toolscache.ToListerWatcherWithContext(lw), relisted: relisted}
}

type relistNotifier struct {
	toolscache.ListerWatcherWithContext
	lists    atomic.Int32
	relisted func(error)
}

func (l *relistNotifier) listing() {
	if n := l.lists.Add(1); n > 1 {
		l.relisted(fmt.Errorf("the informer listed the Workloads again (list %d)", n))
	}
}

// ListWithContext counts a List.
func (l *relistNotifier) ListWithContext(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
	l.listing()
	return l.ListerWatcherWithContext.ListWithContext(ctx, opts)
}

// List is ListWithContext without a context.
func (l *relistNotifier) List(opts metav1.ListOptions) (k8sruntime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// WatchWithContext counts a list streamed as a watch.
func (l *relistNotifier) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if ptr.Deref(opts.SendInitialEvents, false) {
		l.listing()
	}
	return l.ListerWatcherWithContext.WatchWithContext(ctx, opts)
}

// Watch is WatchWithContext without a context.
func (l *relistNotifier) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}
