package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// nopApplier accepts every decision.
type nopApplier struct{ preempted []string }

func (*nopApplier) Admit(_ context.Context, wl *berthv1alpha1.Workload, _ *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	return wl, nil
}

func (n *nopApplier) Preempt(_ context.Context, wl *berthv1alpha1.Workload, _, _ string) error {
	n.preempted = append(n.preempted, workload.Key(wl))
	return nil
}

func (*nopApplier) SetPending(*berthv1alpha1.Workload, string, string) {}

const (
	benchQueues  = 1000
	benchCohorts = 10
)

// benchTopology returns 1000 queues in 10 cohorts with two flavors of
// gpu and cpu, each queue with the given gpu quota on the first flavor.
func benchTopology(gpuQuota string, p berthv1alpha1.ClusterQueuePreemption) (*cache.Cache, *queue.Manager) {
	return benchTopologyWith(gpuQuota, p, nil)
}

// benchTopologyWith is benchTopology with each ClusterQueue changed by
// tune, which may also set up m, before it is added.
func benchTopologyWith(gpuQuota string, p berthv1alpha1.ClusterQueuePreemption, tune func(*queue.Manager, *utiltesting.ClusterQueueWrapper)) (*cache.Cache, *queue.Manager) {
	c, m := cache.New(), queue.NewManager()
	for _, f := range []string{"h100", "a100"} {
		c.AddOrUpdateResourceFlavor(utiltesting.MakeResourceFlavor(f))
	}
	for i := 0; i < benchQueues; i++ {
		cq := utiltesting.MakeClusterQueue(fmt.Sprintf("cq-%04d", i)).Cohort(fmt.Sprintf("cohort-%d", i%benchCohorts)).
			ResourceGroup(
				utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", gpuQuota).Resource("cpu", "1000").Obj(),
				utiltesting.MakeFlavorQuotas("a100").Resource("nvidia.com/gpu", "0").Resource("cpu", "0").Obj(),
			).Preemption(p)
		if tune != nil {
			tune(m, cq)
		}
		c.AddOrUpdateClusterQueue(cq.Obj())
		m.AddOrUpdateClusterQueue(cq.Obj())
	}
	return c, m
}

func benchWorkloads(n int, priority int32, gpus string) []*berthv1alpha1.Workload {
	wls := make([]*berthv1alpha1.Workload, n)
	for i := range wls {
		wls[i] = utiltesting.MakeWorkload(fmt.Sprintf("p%d-w%06d", priority, i), "ns").Priority(priority).
			Created(time.Duration(i)*time.Millisecond).Request(1, "nvidia.com/gpu", gpus, "cpu", "1").Obj()
	}
	return wls
}

// heapDelta runs f and returns by how much it grew the live heap.
func heapDelta(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// BenchmarkDrain admits 50,000 pending workloads spread over 1,000
// ClusterQueues in 10 cohorts, with quota for all of them: no preemption.
// bytes/pending-workload is what the queue manager holds per workload,
// the API object itself excluded (the informer cache owns it).
func BenchmarkDrain(b *testing.B) {
	const pending = 50_000
	wls := benchWorkloads(pending, 0, "1")
	var decisions int
	var elapsed time.Duration
	var perWorkload float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, m := benchTopology("60", berthv1alpha1.ClusterQueuePreemption{})
		mem := heapDelta(func() {
			for j, w := range wls {
				_ = m.AddOrUpdateWorkload(w, berthv1alpha1.ClusterQueueReference(fmt.Sprintf("cq-%04d", j%benchQueues)))
			}
		})
		perWorkload = float64(mem) / pending
		s := New(c, m, &nopApplier{})
		c.Snapshot() // build the tree outside the timer, as at start-up
		b.StartTimer()
		n, took := drain(s)
		decisions, elapsed = decisions+n, elapsed+took
		if got := m.Pending("cq-0000"); got != 0 {
			b.Fatalf("cq-0000 still has %d pending", got)
		}
	}
	b.ReportMetric(float64(decisions)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(perWorkload, "bytes/pending-workload")
}

// BenchmarkPreemption fills every queue with low-priority workloads and
// queues one high-priority one per queue that needs two victims (a queue
// has one preemptor per cycle); a cycle preempts, the victims are removed
// as the controllers would, and a second cycle admits the preemptors.
func BenchmarkPreemption(b *testing.B) {
	const perQueue = 10
	low := benchWorkloads(benchQueues*perQueue, 0, "1")
	high := benchWorkloads(benchQueues, 10, "2")
	var decisions int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, m := benchTopology("10", berthv1alpha1.ClusterQueuePreemption{
			WithinClusterQueue:  berthv1alpha1.PreemptionPolicyLowerPriority,
			ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyLowerPriority,
		})
		for j, w := range low {
			cq := fmt.Sprintf("cq-%04d", j%benchQueues)
			c.AddOrUpdateWorkload(utiltesting.MakeWorkload(w.Name, w.Namespace).Priority(0).Request(1, "nvidia.com/gpu", "1", "cpu", "1").AdmittedIn(cq, "h100").Obj())
		}
		for j, w := range high {
			_ = m.AddOrUpdateWorkload(w, berthv1alpha1.ClusterQueueReference(fmt.Sprintf("cq-%04d", j%benchQueues)))
		}
		a := &nopApplier{}
		s := New(c, m, a)
		c.Snapshot()
		b.StartTimer()
		start := time.Now()
		stats := s.Schedule(context.Background())
		for _, key := range a.preempted {
			c.DeleteWorkload(key)
		}
		m.QueueAllInadmissible()
		second := s.Schedule(context.Background())
		elapsed += time.Since(start)
		decisions += stats.Preempted + second.Admitted
		if second.Admitted != len(high) || stats.Preempted != 2*len(high) {
			b.Fatalf("preempted %d, then admitted %d of %d", stats.Preempted, second.Admitted, len(high))
		}
	}
	b.ReportMetric(float64(decisions)/elapsed.Seconds(), "decisions/s")
}

// BenchmarkBorrowingDrain is BenchmarkDrain where the queues must borrow:
// 50,000 workloads of one GPU over 1,000 ClusterQueues in 10 cohorts, each
// queue with 30 GPUs of its own, so that 30,000 are admitted, the last
// 10,000 of them borrowed, and 20,000 wait. It runs without fair sharing and
// with it, which orders every borrowing head of a round by its queue's
// share.
func BenchmarkBorrowingDrain(b *testing.B) {
	const pending = 50_000
	wls := benchWorkloads(pending, 0, "1")
	for _, fair := range []bool{false, true} {
		b.Run(fmt.Sprintf("fairSharing=%v", fair), func(b *testing.B) {
			var decisions int
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c, m := benchTopology("30", berthv1alpha1.ClusterQueuePreemption{})
				for j, w := range wls {
					_ = m.AddOrUpdateWorkload(w, berthv1alpha1.ClusterQueueReference(fmt.Sprintf("cq-%04d", j%benchQueues)))
				}
				var opts []Option
				if fair {
					opts = append(opts, WithFairSharing())
				}
				s := New(c, m, &nopApplier{}, opts...)
				c.Snapshot()
				b.StartTimer()
				n, took := drain(s)
				decisions, elapsed = decisions+n, elapsed+took
			}
			b.ReportMetric(float64(decisions)/elapsed.Seconds(), "decisions/s")
		})
	}
}

// BenchmarkAdmissionFairSharingDrain is BenchmarkDrain's 50,000 workloads
// over 1,000 ClusterQueues of 30 GPUs each, from 5 LocalQueues per
// ClusterQueue, with and without admission fair sharing: each admission
// charges its LocalQueue and re-orders its ClusterQueue's buckets.
func BenchmarkAdmissionFairSharingDrain(b *testing.B) {
	const pending, locals = 50_000, 5
	wls := benchWorkloads(pending, 0, "1")
	// Workload i goes to ClusterQueue i%1000, as in BenchmarkDrain.
	for i, wl := range wls {
		wl.Spec.QueueName = berthv1alpha1.LocalQueueName(fmt.Sprintf("cq-%04d-lq-%d", i%benchQueues, (i/benchQueues)%locals))
	}
	for _, fair := range []bool{false, true} {
		b.Run(fmt.Sprintf("admissionFairSharing=%v", fair), func(b *testing.B) {
			var decisions int
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c, m := benchTopologyWith("30", berthv1alpha1.ClusterQueuePreemption{}, func(m *queue.Manager, cq *utiltesting.ClusterQueueWrapper) {
					if !fair {
						return
					}
					m.SetAdmissionFairSharing(&queue.AdmissionFairSharing{HalfLife: time.Hour, Interval: time.Minute})
					cq.AdmissionFairSharing()
					for k := range locals {
						m.AddOrUpdateLocalQueue(utiltesting.MakeLocalQueue(fmt.Sprintf("%s-lq-%d", cq.Name, k), "ns", cq.Name))
					}
				})
				for j, w := range wls {
					_ = m.AddOrUpdateWorkload(w, berthv1alpha1.ClusterQueueReference(fmt.Sprintf("cq-%04d", j%benchQueues)))
				}
				s := New(c, m, &nopApplier{})
				c.Snapshot()
				b.StartTimer()
				n, took := drain(s)
				decisions, elapsed = decisions+n, elapsed+took
			}
			b.ReportMetric(float64(decisions)/elapsed.Seconds(), "decisions/s")
		})
	}
}

// drain runs cycles until one admits nothing, and returns the admissions
// and the time they took.
func drain(s *Scheduler) (admitted int, took time.Duration) {
	start := time.Now()
	for {
		stats := s.Schedule(context.Background())
		admitted += stats.Admitted
		if stats.Admitted == 0 {
			return admitted, time.Since(start)
		}
	}
}
