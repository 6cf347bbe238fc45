package applier

import (
	"context"
	"errors"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/scheduler"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Applier writes the scheduler's decisions to Workloads. Each decision is
// one write of a Workload's status, bound to the resourceVersion the
// decision was made on, so a decision about a workload that changed since
// is refused by the API server rather than applied to a state nobody
// looked at.
type Applier struct {
	writer workloadwriter.Writer
	// live reads a Workload from the API server, not a cache: whether an
	// admission whose answer was lost was written after all.
	live     client.Reader
	recorder events.EventRecorder
	pending  *WaitReasons
	// clusterQueue reads a ClusterQueue, for its admission checks.
	clusterQueue func(context.Context, berthv1alpha1.ClusterQueueReference) (*berthv1alpha1.ClusterQueue, error)
}

var _ scheduler.Applier = (*Applier)(nil)

// New returns an Applier writing through w and reading what it wrote back
// through live (an uncached reader), with why workloads wait written by
// pending, and the ClusterQueues' admission checks read with clusterQueue.
func New(w workloadwriter.Writer, live client.Reader, recorder events.EventRecorder, pending *WaitReasons,
	clusterQueue func(context.Context, berthv1alpha1.ClusterQueueReference) (*berthv1alpha1.ClusterQueue, error)) *Applier {
	return &Applier{writer: w, live: live, recorder: recorder, pending: pending, clusterQueue: clusterQueue}
}

// Admit reserves quota and admits wl in one write or, when its
// ClusterQueue has admission checks for it, reserves quota and sets the
// checks Pending.
func (a *Applier) Admit(ctx context.Context, wl *berthv1alpha1.Workload, admission *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	cq, err := a.clusterQueue(ctx, admission.ClusterQueue)
	if err != nil {
		return nil, err
	}
	checks := workload.ChecksFor(cq, admission)
	written, err := workloadwriter.Apply(ctx, a.writer, wl, workload.Admit(admission, checks...))
	if err != nil && mayHaveLanded(err) {
		written, err = a.landed(ctx, wl, admission, err)
	}
	if err != nil {
		return nil, err
	}
	// The Workload's conditions tell its admission, the wait and the
	// flavors included, and its job's Admitted event repeats them: an event
	// here would double the writes of every admission.
	if len(checks) > 0 {
		return written, nil
	}
	metrics.Admitted(string(admission.ClusterQueue), wl.Namespace, string(wl.Spec.QueueName), time.Since(workload.QueueTime(wl)))
	return written, nil
}

// mayHaveLanded reports whether a write that failed with err may still have
// been stored: the API server refused it outright (a 4xx answer but a
// timeout: a conflict, an invalid object, too many requests) or it did
// not. A connection lost after the request went out, a timeout, or a
// server error leaves it unknown.
func mayHaveLanded(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code < 400 || code >= 500 || code == http.StatusRequestTimeout
	}
	return true
}

// landed reads wl back when an admission's answer was lost (err): if the
// API server stored the admission after all, the workload holds the quota
// and runs, and the scheduler must count it, not give the quota to
// another. It returns the stored Workload, or err when the admission is
// not there or cannot be read.
func (a *Applier) landed(ctx context.Context, wl *berthv1alpha1.Workload, admission *berthv1alpha1.Admission, err error) (*berthv1alpha1.Workload, error) {
	stored := &berthv1alpha1.Workload{}
	if getErr := a.live.Get(ctx, client.ObjectKeyFromObject(wl), stored); getErr != nil {
		return nil, errors.Join(err, getErr)
	}
	if stored.ResourceVersion == wl.ResourceVersion || !workload.HasQuotaReservation(stored) ||
		stored.Status.Admission == nil || stored.Status.Admission.ClusterQueue != admission.ClusterQueue {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("An admission whose answer was lost was stored", "workload", klog.KObj(wl), "error", err)
	return stored, nil
}

// Preempt evicts victim to make room for another workload. A victim that
// no job integration owns has nothing to stop: the same write requeues it
// and releases its quota.
func (a *Applier) Preempt(ctx context.Context, victim *berthv1alpha1.Workload, reason, message string) error {
	if _, err := workloadwriter.Apply(ctx, a.writer, victim, workload.Preempt(reason, message)); err != nil {
		return err
	}
	a.recorder.Eventf(victim, nil, corev1.EventTypeNormal, berthv1alpha1.ReasonPreempted, "Preempt", "%s", message)
	if adm := victim.Status.Admission; adm != nil {
		metrics.PreemptedWorkloads.WithLabelValues(metrics.CQ(string(adm.ClusterQueue), reason)...).Inc()
	}
	return nil
}

// SetPending records why wl waits. The write happens off the scheduler's
// path (see WaitReasons).
func (a *Applier) SetPending(wl *berthv1alpha1.Workload, reason, message string) {
	a.pending.Set(wl, reason, message)
}
