package core

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/metrics"
	"github.com/berth-dev/berth/pkg/scheduler"
	"github.com/berth-dev/berth/pkg/workload"
)

// Applier writes the scheduler's decisions to Workloads. Each decision is
// one write of a Workload's status, bound to the resourceVersion the
// decision was made on, so a decision about a workload that changed since
// is refused by the API server rather than applied to a state nobody
// looked at.
type Applier struct {
	client   client.Client
	recorder events.EventRecorder
	pending  *PendingWriter
}

var _ scheduler.Applier = (*Applier)(nil)

// NewApplier returns an Applier writing through c, with why workloads
// wait written by pending.
func NewApplier(c client.Client, recorder events.EventRecorder, pending *PendingWriter) *Applier {
	return &Applier{client: c, recorder: recorder, pending: pending}
}

// Admit reserves quota and admits wl in one write.
func (a *Applier) Admit(ctx context.Context, wl *berthv1alpha1.Workload, admission *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	patched := statusCopy(wl)
	patched.Status.Admission = admission
	msg := fmt.Sprintf("Quota reserved in ClusterQueue %s", admission.ClusterQueue)
	workload.SetCondition(patched, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, msg)
	workload.SetCondition(patched, berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue, berthv1alpha1.ReasonAdmitted,
		fmt.Sprintf("Admitted by ClusterQueue %s", admission.ClusterQueue))
	// A workload admitted again after an eviction is no longer evicted;
	// the conditions keep when and why it last was.
	for _, typ := range []string{berthv1alpha1.WorkloadEvicted, berthv1alpha1.WorkloadPreempted, berthv1alpha1.WorkloadRequeued} {
		if workload.FindCondition(patched, typ) != nil {
			workload.SetCondition(patched, typ, metav1.ConditionFalse, berthv1alpha1.ReasonAdmitted, msg)
		}
	}
	if err := writeWorkloadStatus(ctx, a.client, patched); err != nil {
		return nil, err
	}
	metrics.AdmittedWorkloads.WithLabelValues(string(admission.ClusterQueue)).Inc()
	return patched, nil
}

// Preempt evicts victim to make room for another workload. A victim that
// no job integration owns has nothing to stop: the same write requeues it
// and releases its quota.
func (a *Applier) Preempt(ctx context.Context, victim *berthv1alpha1.Workload, reason, message string) error {
	patched := statusCopy(victim)
	workload.SetCondition(patched, berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, message)
	workload.SetCondition(patched, berthv1alpha1.WorkloadPreempted, metav1.ConditionTrue, reason, message)
	if metav1.GetControllerOf(victim) == nil {
		setRequeued(patched)
	}
	if err := writeWorkloadStatus(ctx, a.client, patched); err != nil {
		return err
	}
	a.recorder.Eventf(victim, nil, corev1.EventTypeNormal, berthv1alpha1.ReasonPreempted, "Preempt", "%s", message)
	if adm := victim.Status.Admission; adm != nil {
		metrics.PreemptedWorkloads.WithLabelValues(string(adm.ClusterQueue), reason).Inc()
	}
	return nil
}

// SetPending records why wl waits. The write happens off the scheduler's
// path (see PendingWriter).
func (a *Applier) SetPending(wl *berthv1alpha1.Workload, reason, message string) {
	a.pending.Set(wl, reason, message)
}
