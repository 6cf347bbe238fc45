package core

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/cache"
	"github.com/berth-dev/berth/pkg/queue"
)

// Options configures the reconcilers.
type Options struct {
	// PodsReadyTimeout, when positive, evicts an admitted workload whose
	// pods are not all ready this long after admission.
	PodsReadyTimeout time.Duration
	// WorkloadConcurrency is how many Workloads are reconciled at once.
	WorkloadConcurrency int
}

// Setup registers the field indexes and the reconcilers of Berth's kinds
// with mgr. They share c and q with the scheduler. It returns the Applier
// the scheduler writes its decisions with.
func Setup(ctx context.Context, mgr ctrl.Manager, c *cache.Cache, q *queue.Manager, recorder events.EventRecorder, opts Options) (*Applier, error) {
	if err := SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	queueWorkloads, err := NewQueueWorkloads(ctx, mgr.GetCache())
	if err != nil {
		return nil, err
	}
	cl := mgr.GetClient()
	n := NewStatusNotifier()
	pending := NewPendingWriter(cl, c.HoldsQuota)
	q.OnBehind(func(behind []queue.Behind) {
		for _, b := range behind {
			pending.SetBehind(b.Workload, b.Head)
		}
	})
	if err := mgr.Add(pending); err != nil {
		return nil, err
	}
	applier := NewApplier(cl, recorder, pending)
	concurrency := max(opts.WorkloadConcurrency, 1)
	statusBudget := newStatusBudget()
	steps := []func() error{
		func() error {
			return ctrl.NewControllerManagedBy(mgr).Named("workload").For(&berthv1alpha1.Workload{}).
				WatchesRawSource(delayed(n.workloads, 0)).
				WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
				Complete(UntilStopped(&WorkloadReconciler{client: cl, cache: c, queues: q, applier: applier, pending: pending, recorder: recorder,
					podsReadyTimeout: opts.PodsReadyTimeout, status: n}))
		},
		func() error {
			return ctrl.NewControllerManagedBy(mgr).Named("clusterqueue").For(&berthv1alpha1.ClusterQueue{}).
				WatchesRawSource(delayed(n.clusterQueues, statusDelay)).
				Complete(UntilStopped(&ClusterQueueReconciler{client: cl, workloads: queueWorkloads.Each, cache: c, queues: q, notifier: n, pacer: newStatusPacer(statusBudget), synced: map[string]int64{}}))
		},
		func() error {
			return ctrl.NewControllerManagedBy(mgr).Named("localqueue").For(&berthv1alpha1.LocalQueue{}).
				WatchesRawSource(delayed(n.localQueues, statusDelay)).
				Complete(UntilStopped(&LocalQueueReconciler{client: cl, workloads: queueWorkloads.Each, notifier: n, pacer: newStatusPacer(statusBudget), seen: map[types.NamespacedName]int64{}}))
		},
		func() error {
			return ctrl.NewControllerManagedBy(mgr).Named("resourceflavor").For(&berthv1alpha1.ResourceFlavor{}).
				Complete(UntilStopped(&ResourceFlavorReconciler{client: cl, cache: c, queues: q, notifier: n}))
		},
		func() error {
			return ctrl.NewControllerManagedBy(mgr).Named("cohort").For(&berthv1alpha1.Cohort{}).
				Complete(UntilStopped(&CohortReconciler{client: cl, cache: c, queues: q}))
		},
		func() error {
			return ctrl.NewControllerManagedBy(mgr).Named("workloadpriorityclass").
				For(&berthv1alpha1.WorkloadPriorityClass{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
				Complete(UntilStopped(&WorkloadPriorityClassReconciler{client: cl}))
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return applier, nil
}
