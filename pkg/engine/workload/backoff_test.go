package workload_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestNextRequeue(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	backoff := workload.Backoff{Base: time.Minute, Max: 10 * time.Minute, Limit: ptr.To[int32](5)}
	evicted := func(reason string, count int32) *berthv1alpha1.Workload {
		wl := utiltesting.MakeWorkload("a", "ns").AdmittedIn("cq", "default").
			Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, reason, 0).Obj()
		wl.UID = "uid-a"
		if count > 0 {
			wl.Status.RequeueState = &berthv1alpha1.RequeueState{Count: ptr.To(count)}
		}
		return wl
	}
	cases := map[string]struct {
		wl             *berthv1alpha1.Workload
		backoff        workload.Backoff
		wantMin        time.Duration
		wantMax        time.Duration
		wantAtOnce     bool
		wantDeactivate bool
		// wantReason is the deactivation's reason; empty for the backoff's
		// limit.
		wantReason string
	}{
		"a preempted workload waits its turn in the queue": {
			wl: evicted(berthv1alpha1.ReasonPreempted, 3), backoff: backoff, wantAtOnce: true,
		},
		"the first timeout waits the base": {
			wl: evicted(berthv1alpha1.ReasonPodsReadyTimeout, 0), backoff: backoff, wantMin: time.Minute, wantMax: 66 * time.Second,
		},
		"the third doubles it twice": {
			wl: evicted(berthv1alpha1.ReasonPodsReadyTimeout, 2), backoff: backoff, wantMin: 4 * time.Minute, wantMax: 264 * time.Second,
		},
		"at most the max": {
			wl: evicted(berthv1alpha1.ReasonPodsReadyTimeout, 4), backoff: backoff, wantMin: 10 * time.Minute, wantMax: 11 * time.Minute,
		},
		"a huge count does not overflow": {
			wl: evicted(berthv1alpha1.ReasonPodsReadyTimeout, 1<<30), backoff: workload.Backoff{Base: time.Minute, Max: time.Hour},
			wantMin: time.Hour, wantMax: 66 * time.Minute,
		},
		"past the limit it is deactivated": {
			wl: evicted(berthv1alpha1.ReasonPodsReadyTimeout, 5), backoff: backoff, wantDeactivate: true,
		},
		"past its maximum execution time it is deactivated, without a backoff": {
			wl: evicted(berthv1alpha1.ReasonMaximumExecutionTimeExceeded, 0), wantDeactivate: true, wantReason: berthv1alpha1.ReasonMaximumExecutionTimeExceeded,
		},
		"no backoff configured": {
			wl: evicted(berthv1alpha1.ReasonPodsReadyTimeout, 2), wantAtOnce: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := workload.NextRequeue(tc.wl, tc.backoff, now)
			switch {
			case tc.wantDeactivate && tc.wantReason != "":
				if d.Deactivate == "" || d.DeactivateReason != tc.wantReason || d.At != nil {
					t.Errorf("decision %+v, want a deactivation for %s", d, tc.wantReason)
				}
			case tc.wantDeactivate:
				if d.Deactivate == "" || !strings.Contains(d.Deactivate, "backoffLimitCount") {
					t.Errorf("decision %+v, want a deactivation naming the limit", d)
				}
			case tc.wantAtOnce:
				if d.At != nil || d.Deactivate != "" {
					t.Errorf("decision %+v, want a requeue at once", d)
				}
			default:
				if d.At == nil {
					t.Fatalf("decision %+v, want a time", d)
				}
				if wait := d.At.Sub(now); wait < tc.wantMin-time.Second || wait > tc.wantMax {
					t.Errorf("waits %v, want between %v and %v", wait, tc.wantMin, tc.wantMax)
				}
				if again := workload.NextRequeue(tc.wl, tc.backoff, now); !again.At.Equal(*d.At) {
					t.Errorf("a second decision waits until %v, the first %v: want the same", again.At, d.At)
				}
			}
		})
	}
}

func TestPodSetsDiffer(t *testing.T) {
	base := func() *utiltesting.PodSetWrapper {
		return utiltesting.MakePodSet("main", 4).Request("nvidia.com/gpu", "1", "cpu", "2")
	}
	cases := map[string]struct {
		have, want berthv1alpha1.PodSet
		wantDiff   string
	}{
		"the same": {have: *base().Obj(), want: *base().Obj()},
		"the same requests written otherwise": {
			have: *base().Obj(), want: *utiltesting.MakePodSet("main", 4).Request("nvidia.com/gpu", "1", "cpu", "2000m").Obj(),
		},
		"more pods":         {have: *base().Obj(), want: *utiltesting.MakePodSet("main", 8).Request("nvidia.com/gpu", "1", "cpu", "2").Obj(), wantDiff: "podset main: 8 pods instead of 4"},
		"more GPUs per pod": {have: *base().Obj(), want: *utiltesting.MakePodSet("main", 4).Request("nvidia.com/gpu", "8", "cpu", "2").Obj(), wantDiff: "podset main: nvidia.com/gpu per pod 8 instead of 1"},
		"a new resource":    {have: *base().Obj(), want: *base().Request("memory", "1Gi").Obj(), wantDiff: "podset main: memory per pod 1Gi instead of 0"},
		"partial admission": {have: *base().Obj(), want: *base().MinCount(2).Obj(), wantDiff: "podset main: at least 2 pods instead of 4"},
		"a node selector":   {have: *base().Obj(), want: *base().NodeSelector("zone", "a").Obj(), wantDiff: "podset main: another node selector"},
		"a renamed podset":  {have: *base().Obj(), want: *utiltesting.MakePodSet("workers", 4).Obj(), wantDiff: "podset 0 is workers instead of main"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := workload.PodSetsDiffer([]berthv1alpha1.PodSet{tc.have}, []berthv1alpha1.PodSet{tc.want}); got != tc.wantDiff {
				t.Errorf("PodSetsDiffer = %q, want %q", got, tc.wantDiff)
			}
		})
	}
}
