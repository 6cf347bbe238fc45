package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestMaximumExecutionTimeDeactivatesTheJob: a Job labelled with a
// maximum execution time runs that long, is then evicted and deactivated
// with reason MaximumExecutionTimeExceeded, gives its quota back, and says
// why it waits; its Workload keeps how long it ran.
func TestMaximumExecutionTimeDeactivatesTheJob(t *testing.T) {
	ns, cqName := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("limited", ns).Queue("main").Label(berthv1alpha1.MaxExecTimeSecondsLabel, "3").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	wl := workloadOf(t, job, "the workload admitted", admitted)
	if got := ptr.Deref(wl.Spec.MaximumExecutionTimeSeconds, 0); got != 3 {
		t.Errorf("spec.maximumExecutionTimeSeconds = %d, want 3 from the label", got)
	}
	jobState(t, job, false)
	wl = workloadOf(t, job, "the workload deactivated after its time", func(wl *berthv1alpha1.Workload) error {
		if workload.IsActive(wl) {
			return errorf("still active: %+v", wl.Status.Conditions)
		}
		return conditionIs(berthv1alpha1.WorkloadRequeued, metav1.ConditionFalse, berthv1alpha1.ReasonMaximumExecutionTimeExceeded)(wl)
	})
	ev := workload.FindCondition(wl, berthv1alpha1.WorkloadEvicted)
	if ev == nil || ev.Reason != berthv1alpha1.ReasonMaximumExecutionTimeExceeded || !contains(ev.Message, "maximumExecutionTimeSeconds of 3") {
		t.Errorf("Evicted = %+v, want reason MaximumExecutionTimeExceeded naming the limit", ev)
	}
	if ran := ptr.Deref(wl.Status.AccumulatedPastExecutionTimeSeconds, 0); ran < 3 || ran > 10 {
		t.Errorf("accumulatedPastExecutionTimeSeconds = %d, want the 3s or a little more it ran", ran)
	}
	if q := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved); q == nil || !contains(q.Message, "maximumExecutionTimeSeconds") {
		t.Errorf("QuotaReserved = %+v, want the waiting message to say why", q)
	}
	jobState(t, job, true)
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.AdmittedWorkloads != 0 {
			return errorf("want the quota given back, status %+v", cq.Status)
		}
		return nil
	})
	waitForEvent(t, ns, wl.Name, berthv1alpha1.WorkloadEvicted, "(MaximumExecutionTimeExceeded)")
}

// TestMaximumExecutionTimeLabelIsChecked: a label that is not a whole
// number of seconds is refused, naming it.
func TestMaximumExecutionTimeLabelIsChecked(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("bad-limit", ns).Queue("main").Label(berthv1alpha1.MaxExecTimeSecondsLabel, "1h").Request(corev1.ResourceCPU, "1").Obj()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := server.Client.Create(ctx, job)
	if err == nil || !contains(err.Error(), `metadata.labels[berth.dev/max-exec-time-seconds]`) {
		t.Fatalf("creating a job with %s=1h: %v, want a refusal naming the label", berthv1alpha1.MaxExecTimeSecondsLabel, err)
	}
}
