package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Options configures the reconcilers.
type Options struct {
	// PodsReadyTimeout, when positive, evicts an admitted workload whose
	// pods are not all ready this long after admission.
	PodsReadyTimeout time.Duration
	// RecoveryTimeout, when positive (and PodsReadyTimeout too), evicts a
	// running workload whose pods, once all ready, are not all ready again
	// this long after one stopped being ready.
	RecoveryTimeout time.Duration
	// NodeFailureGrace, when positive, evicts the admitted workloads that
	// ran pods on a node failed for this long; 0 leaves them.
	NodeFailureGrace time.Duration
	// Retention is how long Workloads that are done are kept.
	Retention Retention
	// WorkloadConcurrency is how many Workloads are reconciled at once.
	WorkloadConcurrency int
	// Backoff is how long a workload evicted because its pods were not
	// ready waits before it is queued again.
	Backoff workload.Backoff
	// Integrated reports whether a job integration runs the workloads of
	// an owner of this kind.
	Integrated func(metav1.OwnerReference) bool
	// FairSharing reports each ClusterQueue's weighted share in its
	// status.
	FairSharing bool
	// AdmissionFairSharing is set when the configuration has admission
	// fair sharing: ClusterQueues' admissionScope and LocalQueues'
	// fairSharing take effect.
	AdmissionFairSharing bool
	// UsageSamplingInterval, when positive, is how often the LocalQueues'
	// usage is sampled for admission fair sharing.
	UsageSamplingInterval time.Duration
}

// Engine is what the reconcilers share with the scheduler: its cache of
// quota and its queues, the writer of Workload status, and the writer of
// why workloads wait.
type Engine struct {
	Cache    *cache.Cache
	Queues   *queue.Manager
	Writer   workloadwriter.Writer
	Pending  pendingMessages
	Recorder events.EventRecorder
}

// Setup registers the field indexes and the reconcilers of Berth's kinds
// with mgr. The indexes come first: an informer takes indexes only before
// it starts, and the reconcilers' informers start with the manager.
func Setup(ctx context.Context, mgr ctrl.Manager, e Engine, opts Options) error {
	if err := SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	queueWorkloads, err := NewQueueWorkloads(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	cl := mgr.GetClient()
	n := NewStatusNotifier()
	// The queues' status writes share one budget.
	budget := newStatusBudget()
	features := Features{FairSharing: opts.FairSharing, AdmissionFairSharing: opts.AdmissionFairSharing}
	warnings := newUnusedWarnings(e.Recorder)
	reconcilers := []interface{ SetupWithManager(ctrl.Manager) error }{
		&WorkloadReconciler{
			client: cl, stored: queueWorkloads.Get, writer: e.Writer, cache: e.Cache, queues: e.Queues, pending: e.Pending, recorder: e.Recorder,
			podsReadyTimeout: opts.PodsReadyTimeout, recoveryTimeout: opts.RecoveryTimeout, backoff: opts.Backoff, retention: opts.Retention, integrated: integratedOr(opts.Integrated),
			concurrency: opts.WorkloadConcurrency, status: n,
		},
		&ClusterQueueReconciler{
			client: cl, workloads: queueWorkloads.Each, cache: e.Cache, queues: e.Queues, notifier: n,
			pacer: newStatusPacer(budget), synced: map[string]int64{}, fairSharing: opts.FairSharing, features: features, warnings: warnings,
		},
		&LocalQueueReconciler{
			client: cl, workloads: queueWorkloads.Each, queues: e.Queues, notifier: n,
			pacer: newStatusPacer(budget), seen: map[types.NamespacedName]int64{}, features: features, warnings: warnings,
		},
		&ResourceFlavorReconciler{client: cl, cache: e.Cache, queues: e.Queues, notifier: n},
		&AdmissionCheckReconciler{client: cl, cache: e.Cache, queues: e.Queues, notifier: n},
		&CohortReconciler{client: cl, cache: e.Cache, queues: e.Queues, notifier: n, features: features, warnings: warnings},
		&WorkloadPriorityClassReconciler{client: cl, notifier: n},
		&NamespaceReconciler{client: cl, workloads: queueWorkloads.Each, notifier: n},
	}
	if opts.NodeFailureGrace > 0 {
		reconcilers = append(reconcilers, &NodeFailureReconciler{
			client: cl, writer: e.Writer, recorder: e.Recorder, grace: opts.NodeFailureGrace, failed: map[string]*nodeFailure{},
		})
	}
	for _, r := range reconcilers {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := mgr.Add(&strandedSampler{cache: e.Cache, queues: e.Queues, interval: strandedInterval}); err != nil {
		return err
	}
	if opts.UsageSamplingInterval > 0 {
		return mgr.Add(&usageSampler{cache: e.Cache, queues: e.Queues, notifier: n, interval: opts.UsageSamplingInterval})
	}
	return nil
}

// strandedInterval is how often the fabric's fragmentation is measured.
const strandedInterval = 10 * time.Second

// integratedOr is f, or a function that knows no integration.
func integratedOr(f func(metav1.OwnerReference) bool) func(metav1.OwnerReference) bool {
	if f != nil {
		return f
	}
	return func(metav1.OwnerReference) bool { return false }
}
