package controller

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controller"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/jobframework"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestRetentionDeletesWhatIsDone runs a manager with retention on: a
// finished Job's Workload is deleted and the Job kept (and given no new
// Workload); a Job that Berth deactivated (past its time limit) is deleted
// with its Workload once afterDeactivatedByBerth is over; a Workload a
// person deactivated is kept.
func TestRetentionDeletesWhatIsDone(t *testing.T) {
	withManager(t, func(o *controllermanager.Options) {
		o.Controllers.Retention = controller.Retention{AfterFinished: ptr.To(time.Duration(0)), AfterDeactivated: ptr.To(2 * time.Second)}
	})
	ns, _ := queueSetup(t, "4", nil)
	done := utiltesting.MakeJob("done", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	limited := utiltesting.MakeJob("limited", ns).Queue("main").Label(berthv1alpha1.MaxExecTimeSecondsLabel, "1").Request(corev1.ResourceCPU, "1").Obj()
	stopped := utiltesting.MakeJob("stopped", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, done, limited, stopped)
	for _, j := range []*batchv1.Job{done, limited, stopped} {
		workloadOf(t, j, "admitted", admitted)
	}
	finishJob(t, done)
	stoppedWL := workloadOf(t, stopped, "admitted", admitted)
	patched := stoppedWL.DeepCopy()
	patched.Spec.Active = ptr.To(false)
	if err := server.Client.Patch(ctxFor(t), patched, client.MergeFrom(stoppedWL)); err != nil {
		t.Fatal(err)
	}

	workloadName := func(j *batchv1.Job) types.NamespacedName {
		cur := &batchv1.Job{}
		if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(j), cur); err != nil {
			t.Fatal(err)
		}
		return types.NamespacedName{Namespace: ns, Name: jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), cur.Name, string(cur.UID))}
	}
	doneWL, limitedWL := workloadName(done), workloadName(limited)
	waitFor(t, "the finished Workload deleted, the Job kept", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, doneWL, &berthv1alpha1.Workload{}); !apierrors.IsNotFound(err) {
			return errorf("the finished Workload: %v", err)
		}
		return server.Client.Get(ctx, client.ObjectKeyFromObject(done), &batchv1.Job{})
	})
	waitFor(t, "the Job past its time limit deleted with its Workload", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(limited), &batchv1.Job{}); !apierrors.IsNotFound(err) {
			return errorf("the Job: %v", err)
		}
		if err := server.Client.Get(ctx, limitedWL, &berthv1alpha1.Workload{}); !apierrors.IsNotFound(err) {
			return errorf("its Workload: %v", err)
		}
		return nil
	})
	waitForEvent(t, ns, limitedWL.Name, controller.EventRetentionExpired, "Deleted Job limited: Berth deactivated the workload")
	// Well past both retention times: what a person stopped stays, and the
	// finished Job got no new Workload.
	time.Sleep(3 * time.Second)
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(stoppedWL), &berthv1alpha1.Workload{}); err != nil {
		t.Errorf("the Workload a person deactivated: %v, want it kept", err)
	}
	if err := server.Client.Get(ctxFor(t), doneWL, &berthv1alpha1.Workload{}); !apierrors.IsNotFound(err) {
		t.Errorf("the finished Job's Workload: %v, want none made again", err)
	}
}
