package applier

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

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
	writer   workloadwriter.Writer
	recorder events.EventRecorder
	pending  *WaitReasons
	// clusterQueue reads a ClusterQueue, for its admission checks.
	clusterQueue func(context.Context, berthv1alpha1.ClusterQueueReference) (*berthv1alpha1.ClusterQueue, error)
}

var _ scheduler.Applier = (*Applier)(nil)

// New returns an Applier writing through w, with why workloads wait
// written by pending, and the ClusterQueues' admission checks read with
// clusterQueue.
func New(w workloadwriter.Writer, recorder events.EventRecorder, pending *WaitReasons,
	clusterQueue func(context.Context, berthv1alpha1.ClusterQueueReference) (*berthv1alpha1.ClusterQueue, error)) *Applier {
	return &Applier{writer: w, recorder: recorder, pending: pending, clusterQueue: clusterQueue}
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
	if err != nil {
		return nil, err
	}
	if len(checks) > 0 {
		a.recorder.Eventf(wl, nil, corev1.EventTypeNormal, berthv1alpha1.WorkloadQuotaReserved, "Reserve",
			"Quota reserved in ClusterQueue %s; waiting for admission checks %v", admission.ClusterQueue, checks)
		return written, nil
	}
	// One event for both: quota is reserved and the workload admitted in
	// the same write.
	a.recorder.Eventf(wl, nil, corev1.EventTypeNormal, berthv1alpha1.WorkloadAdmitted, "Admit", "%s", workload.AdmittedMessage(wl, admission, time.Now()))
	metrics.Admitted(string(admission.ClusterQueue), wl.Namespace, string(wl.Spec.QueueName), time.Since(workload.QueueTime(wl)))
	return written, nil
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
