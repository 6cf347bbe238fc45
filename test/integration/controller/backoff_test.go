package controller

import (
	"context"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestPodsReadyTimeoutBacksOff runs a manager with a short PodsReady
// timeout and backoff: a workload whose pods never become ready (nothing
// runs them here) is evicted, waits longer after each requeue
// (requeueState.requeueAt), and after the limit is deactivated with the
// reason named, instead of evicting and readmitting in a loop. Set active
// again, it starts over.
func TestPodsReadyTimeoutBacksOff(t *testing.T) {
	withManager(t, func(o *controllermanager.Options) {
		o.Controllers.PodsReadyTimeout = time.Second
		o.Controllers.Backoff = workload.Backoff{Base: time.Second, Max: 4 * time.Second, Limit: ptr.To[int32](2)}
	})
	ns, _ := queueSetup(t, "2", nil)
	wl := utiltesting.MakeWorkload("never-ready", ns).Queue("main").PodSets(*utiltesting.MakePodSet("main", 1).Request("cpu", "1").Obj()).Obj()
	mustCreate(t, wl)

	var waits []time.Duration
	seen := int32(0)
	waitFor(t, "two requeues with backoff, then deactivation", func(ctx context.Context) error {
		cur := &berthv1alpha1.Workload{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), cur); err != nil {
			return err
		}
		if rs := cur.Status.RequeueState; rs != nil && ptr.Deref(rs.Count, 0) > seen && rs.RequeueAt != nil {
			seen = *rs.Count
			requeued := workload.FindCondition(cur, berthv1alpha1.WorkloadRequeued)
			waits = append(waits, rs.RequeueAt.Sub(requeued.LastTransitionTime.Time))
		}
		if workload.IsActive(cur) {
			return errorf("active after %d requeues", seen)
		}
		c := workload.FindCondition(cur, berthv1alpha1.WorkloadRequeued)
		if c == nil || c.Reason != berthv1alpha1.ReasonRequeuingLimitExceeded || !contains(c.Message, "backoffLimitCount") {
			return errorf("deactivated, but Requeued is %+v", c)
		}
		if q := workload.FindCondition(cur, berthv1alpha1.WorkloadQuotaReserved); q == nil || q.Status != "False" || q.Message != c.Message {
			return errorf("deactivated, but QuotaReserved is %+v", q)
		}
		return nil
	})
	if len(waits) != 2 || waits[1] <= waits[0] {
		t.Errorf("waits before the requeues %v, want two, the second longer", waits)
	}

	// Reactivated, it is queued again with its backoff started over.
	cur := &berthv1alpha1.Workload{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(wl), cur); err != nil {
		t.Fatal(err)
	}
	patched := cur.DeepCopy()
	patched.Spec.Active = ptr.To(true)
	if err := server.Client.Patch(ctxFor(t), patched, client.MergeFrom(cur)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reactivated workload admitted again", func(ctx context.Context) error {
		got := &berthv1alpha1.Workload{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), got); err != nil {
			return err
		}
		if !workload.HasQuotaReservation(got) {
			return errorf("not admitted: %+v", got.Status.Conditions)
		}
		return nil
	})
}
