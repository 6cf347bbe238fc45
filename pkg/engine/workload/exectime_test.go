package workload_test

import (
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestExecutionTimeAccumulatesOverAdmissions: a requeue adds the admission
// that ended, from Admitted=True to the eviction, to what earlier ones ran;
// the sum saturates; a reactivation starts it over.
func TestExecutionTimeAccumulatesOverAdmissions(t *testing.T) {
	base := utiltesting.BaseTime
	evictedAfter := func(past int32, ran time.Duration) *berthv1alpha1.Workload {
		wl := utiltesting.MakeWorkload("a", "ns").MaxExecTime(100).AdmittedIn("cq", "default").
			Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, ran).Obj()
		wl.Status.AccumulatedPastExecutionTimeSeconds = ptr.To(past)
		return wl
	}

	wl := evictedAfter(30, 40*time.Second)
	if got := workload.ExecutionTime(wl, base.Add(time.Hour)); got != 70*time.Second {
		t.Errorf("execution time of an evicted workload = %s, want 70s: the run ends at the eviction", got)
	}
	workload.Requeue(workload.RequeueDecision{})(wl)
	if got := ptr.Deref(wl.Status.AccumulatedPastExecutionTimeSeconds, 0); got != 70 {
		t.Errorf("accumulated after the requeue = %d, want 70", got)
	}
	if got := workload.ExecutionTime(wl, base.Add(time.Hour)); got != 70*time.Second {
		t.Errorf("execution time while waiting = %s, want 70s", got)
	}

	running := utiltesting.MakeWorkload("a", "ns").MaxExecTime(100).AdmittedIn("cq", "default").Obj()
	running.Status.AccumulatedPastExecutionTimeSeconds = ptr.To[int32](70)
	if left, ok := workload.ExecutionTimeLeft(running, base.Add(20*time.Second)); !ok || left != 10*time.Second {
		t.Errorf("time left = %s, %t; want 10s of the 100s limit", left, ok)
	}
	if left, _ := workload.ExecutionTimeLeft(running, base.Add(31*time.Second)); left > 0 {
		t.Errorf("time left after 101s = %s, want none", left)
	}

	huge := evictedAfter(math.MaxInt32-5, time.Minute)
	workload.Requeue(workload.RequeueDecision{})(huge)
	if got := *huge.Status.AccumulatedPastExecutionTimeSeconds; got != math.MaxInt32 {
		t.Errorf("accumulated near the top = %d, want it saturated at %d", got, int32(math.MaxInt32))
	}

	workload.Reactivate()(wl)
	if wl.Status.AccumulatedPastExecutionTimeSeconds != nil {
		t.Errorf("accumulated after a reactivation = %d, want it cleared", *wl.Status.AccumulatedPastExecutionTimeSeconds)
	}
}
