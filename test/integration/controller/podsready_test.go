package controller

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestRecoveryTimeoutEvictsAJobWhosePodsStopBeingReady: a running Job
// whose pods were all ready, and then one is not, is evicted once
// recoveryTimeout has passed, not at once (its pods-ready timeout counts
// from admission and is long over), and the eviction names the setting.
func TestRecoveryTimeoutEvictsAJobWhosePodsStopBeingReady(t *testing.T) {
	withManager(t, func(o *controllermanager.Options) {
		o.Controllers.PodsReadyTimeout = 2 * time.Second
		o.Controllers.RecoveryTimeout = 3 * time.Second
	})
	ns, _ := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("recovers", ns).Queue("main").Parallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "the workload admitted", admitted)
	jobState(t, job, false)

	setReady(t, job, 2)
	workloadOf(t, job, "the pods ready", conditionIs(berthv1alpha1.WorkloadPodsReady, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReady))
	// Longer than the pods-ready timeout since admission: that one no
	// longer applies once the pods were ready.
	time.Sleep(2 * time.Second)
	setReady(t, job, 1)
	wl := workloadOf(t, job, "a pod not ready", conditionIs(berthv1alpha1.WorkloadPodsReady, metav1.ConditionFalse, berthv1alpha1.ReasonWaitForRecovery))
	notReadySince := workload.FindCondition(wl, berthv1alpha1.WorkloadPodsReady).LastTransitionTime.Time

	wl = workloadOf(t, job, "the workload evicted", conditionIs(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReadyTimeout))
	ev := workload.FindCondition(wl, berthv1alpha1.WorkloadEvicted)
	if !contains(ev.Message, "waitForPodsReady.recoveryTimeout") {
		t.Errorf("eviction message %q, want it to name recoveryTimeout", ev.Message)
	}
	// Condition times are in whole seconds.
	if waited := ev.LastTransitionTime.Sub(notReadySince); waited < 2*time.Second {
		t.Errorf("evicted %s after a pod stopped being ready, want the 3s recoveryTimeout", waited)
	}
}

// setReady plays the Job controller: n of the job's pods are ready.
func setReady(t *testing.T, job *batchv1.Job, n int32) {
	t.Helper()
	waitFor(t, "job "+job.Name+" status written", func(ctx context.Context) error {
		cur := &batchv1.Job{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(job), cur); err != nil {
			return err
		}
		if cur.Status.StartTime == nil {
			cur.Status.StartTime = ptr.To(metav1.Now())
		}
		cur.Status.Active, cur.Status.Ready = n, ptr.To(n)
		return server.Client.Status().Update(ctx, cur)
	})
}
