package queue

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

var hourly = &AdmissionFairSharing{HalfLife: time.Hour, Interval: 5 * time.Minute}

// TestUsageDecaysByHalfLife: a queue's usage halves every half-life once
// it holds nothing, and approaches what it holds while that stays the
// same.
func TestUsageDecaysByHalfLife(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lq := &localQueue{weight: 1, consumed: map[corev1.ResourceName]float64{"nvidia.com/gpu": 8}, lastUpdate: start}
	lq.sample(hourly, start.Add(time.Hour), nil)
	if got := lq.consumed["nvidia.com/gpu"]; math.Abs(got-4) > 1e-9 {
		t.Errorf("after one half-life holding nothing: %v GPUs, want 4", got)
	}
	lq.sample(hourly, start.Add(3*time.Hour), nil)
	if got := lq.consumed["nvidia.com/gpu"]; math.Abs(got-1) > 1e-9 {
		t.Errorf("after two more: %v GPUs, want 1", got)
	}
	now := start.Add(3 * time.Hour)
	for range 200 {
		now = now.Add(5 * time.Minute)
		lq.sample(hourly, now, resources.Requests{"nvidia.com/gpu": 6})
	}
	if got := lq.consumed["nvidia.com/gpu"]; math.Abs(got-6) > 0.01 {
		t.Errorf("after 200 samples holding 6 GPUs: %v, want about 6", got)
	}
	// A half-life of 0 keeps only the latest sample.
	lq.sample(&AdmissionFairSharing{Interval: time.Minute}, now.Add(time.Minute), resources.Requests{"nvidia.com/gpu": 2})
	if got := lq.consumed["nvidia.com/gpu"]; got != 2 {
		t.Errorf("half-life 0: %v GPUs, want 2", got)
	}
}

// TestShareWeighsResourcesAgainstQuota: usage counts as a fraction of the
// ClusterQueue's quota of each resource, weighed, over the LocalQueue's
// weight; resources without quota do not count; weight 0 is last.
func TestShareWeighsResourcesAgainstQuota(t *testing.T) {
	quota := map[corev1.ResourceName]int64{"cpu": 16000, "nvidia.com/gpu": 8}
	consumed := map[corev1.ResourceName]float64{"cpu": 4000, "nvidia.com/gpu": 4, "memory": 1 << 40}
	cases := map[string]struct {
		afs    *AdmissionFairSharing
		weight float64
		want   float64
	}{
		"every resource weighs 1": {afs: hourly, weight: 1, want: 0.25 + 0.5},
		"weight 2 halves it":      {afs: hourly, weight: 2, want: 0.375},
		"cpu does not count":      {afs: &AdmissionFairSharing{ResourceWeights: map[corev1.ResourceName]float64{"cpu": 0}}, weight: 1, want: 0.5},
		"GPUs count three times":  {afs: &AdmissionFairSharing{ResourceWeights: map[corev1.ResourceName]float64{"nvidia.com/gpu": 3}}, weight: 1, want: 0.25 + 1.5},
		"weight 0 goes after all": {afs: hourly, weight: 0, want: math.Inf(1)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lq := &localQueue{weight: tc.weight, consumed: consumed}
			if got := lq.share(tc.afs, quota); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
				t.Errorf("share %v, want %v", got, tc.want)
			}
		})
	}
}

// fairManager is a Manager with admission fair sharing, a ClusterQueue cq
// of 8 GPUs that orders by LocalQueue usage, and LocalQueues a and b in
// namespace ns; a has used 4 GPUs for a long time.
func fairManager(t *testing.T) *Manager {
	t.Helper()
	m := NewManager()
	m.SetAdmissionFairSharing(hourly)
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("cq").AdmissionFairSharing().
		ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8").Obj()).Obj())
	a := utiltesting.MakeLocalQueue("a", "ns", "cq")
	a.Status.FairSharing = &berthv1alpha1.FairSharingStatus{AdmissionFairSharingStatus: &berthv1alpha1.AdmissionFairSharingStatus{
		ConsumedResources: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
		LastUpdate:        metav1.Now(),
	}}
	m.AddOrUpdateLocalQueue(a)
	m.AddOrUpdateLocalQueue(utiltesting.MakeLocalQueue("b", "ns", "cq"))
	return m
}

func gpuWorkload(name, lq string, priority int32, created time.Duration) *berthv1alpha1.Workload {
	return utiltesting.MakeWorkload(name, "ns").Queue(lq).Priority(priority).Created(created).Request(1, "nvidia.com/gpu", "1").Obj()
}

// TestAdmissionFairSharingOrdersByLocalQueueUsage: the LocalQueue that
// used less goes first, whatever the priority and age of the other's
// workloads; each admission is charged at once, so the order turns when
// the lighter queue has caught up; within a LocalQueue, priority and age
// still decide.
func TestAdmissionFairSharingOrdersByLocalQueueUsage(t *testing.T) {
	m := fairManager(t)
	for _, wl := range []*berthv1alpha1.Workload{
		gpuWorkload("a-old-high", "a", 10, 0),
		gpuWorkload("a-new", "a", 0, 3*time.Second),
		gpuWorkload("b-new", "b", 0, 5*time.Second),
		gpuWorkload("b-old", "b", 0, 4*time.Second),
	} {
		if err := m.AddOrUpdateWorkload(wl, "cq"); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"ns/b-old", "ns/b-new", "ns/a-old-high", "ns/a-new"}, m.Order("cq")); diff != "" {
		t.Errorf("order before any admission (-want +got):\n%s", diff)
	}
	// b-old is admitted with 80 GPUs: one interval's worth of it, 4.5
	// GPUs, is more than a's history of 4: a goes first after it.
	heads := m.Heads(nil, nil)
	if len(heads) != 1 || heads[0].Info.Key != "ns/b-old" {
		t.Fatalf("heads %v, want ns/b-old", heads)
	}
	m.Charge(heads[0], resources.Usage{{Flavor: "h100", Resource: "nvidia.com/gpu"}: 80})
	m.Done(heads[0])
	if diff := cmp.Diff([]string{"ns/a-old-high", "ns/a-new", "ns/b-new"}, m.Order("cq")); diff != "" {
		t.Errorf("order after b's admission (-want +got):\n%s", diff)
	}
	if heads := m.Heads(nil, nil); len(heads) != 1 || heads[0].Info.Key != "ns/a-old-high" {
		t.Errorf("heads %v, want ns/a-old-high", heads)
	}
}

// TestAdmissionFairSharingFollowsTheClusterQueue: turning the mode on or
// off re-orders the workloads already queued, and a LocalQueue of weight
// 0 goes last.
func TestAdmissionFairSharingFollowsTheClusterQueue(t *testing.T) {
	m := fairManager(t)
	for _, wl := range []*berthv1alpha1.Workload{gpuWorkload("a1", "a", 0, 0), gpuWorkload("b1", "b", 0, time.Second)} {
		if err := m.AddOrUpdateWorkload(wl, "cq"); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"ns/b1", "ns/a1"}, m.Order("cq")); diff != "" {
		t.Errorf("with admission fair sharing (-want +got):\n%s", diff)
	}
	plain := utiltesting.MakeClusterQueue("cq").ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8").Obj()).Obj()
	m.AddOrUpdateClusterQueue(plain)
	if diff := cmp.Diff([]string{"ns/a1", "ns/b1"}, m.Order("cq")); diff != "" {
		t.Errorf("without (-want +got):\n%s", diff)
	}
	heads := m.Heads(nil, nil)
	if len(heads) != 1 || heads[0].Info.Key != "ns/a1" {
		t.Fatalf("heads %v, want ns/a1", heads)
	}
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("cq").AdmissionFairSharing().
		ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8").Obj()).Obj())
	b := utiltesting.MakeLocalQueue("b", "ns", "cq")
	b.Spec.FairSharing = &berthv1alpha1.FairSharing{Weight: new(resource.MustParse("0"))}
	m.AddOrUpdateLocalQueue(b)
	if err := m.AddOrUpdateWorkload(gpuWorkload("b2", "b", 0, 2*time.Second), "cq"); err != nil {
		t.Fatal(err)
	}
	// a1, popped while the queue had no fair sharing, goes back to the
	// bucket of its LocalQueue.
	m.Requeue(heads[0], RequeueRetry)
	if diff := cmp.Diff([]string{"ns/a1", "ns/b1", "ns/b2"}, m.Order("cq")); diff != "" {
		t.Errorf("b of weight 0 (-want +got):\n%s", diff)
	}
	if heads := m.Heads(nil, nil); len(heads) != 1 || heads[0].Info.Key != "ns/a1" {
		t.Errorf("heads %v, want ns/a1", heads)
	}
}

// TestUsageSurvivesARestart: the usage a LocalQueue's status shows is
// where a new Manager starts from.
func TestUsageSurvivesARestart(t *testing.T) {
	m := fairManager(t)
	heads := []Head{{Info: workload.NewInfo(gpuWorkload("b1", "b", 0, 0)), ClusterQueue: "cq"}}
	m.Charge(heads[0], resources.Usage{{Flavor: "h100", Resource: "nvidia.com/gpu"}: 2})
	st := m.LocalQueueFairSharing("ns/b")
	if st == nil || st.AdmissionFairSharingStatus == nil {
		t.Fatalf("status %v, want usage", st)
	}
	got := st.AdmissionFairSharingStatus.ConsumedResources["nvidia.com/gpu"]
	// One interval of 2 GPUs with a half-life of an hour: 2*(1-0.5^(1/12)).
	if got.String() != "112m" {
		t.Errorf("consumed %s GPUs, want 112m", got.String())
	}
	if st.WeightedShare != 14 {
		t.Errorf("weighted share %d per mille, want 14 (0.11 of 8 GPUs)", st.WeightedShare)
	}
	a := m.LocalQueueFairSharing("ns/a")
	restarted := NewManager()
	restarted.SetAdmissionFairSharing(hourly)
	restarted.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("cq").AdmissionFairSharing().
		ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8").Obj()).Obj())
	lq := utiltesting.MakeLocalQueue("a", "ns", "cq")
	lq.Status.FairSharing = a
	restarted.AddOrUpdateLocalQueue(lq)
	if diff := cmp.Diff(a, restarted.LocalQueueFairSharing("ns/a")); diff != "" {
		t.Errorf("after a restart (-before +after):\n%s", diff)
	}
}
