package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func keysOf(infos []*workload.Info) []string {
	keys := []string{}
	for _, info := range infos {
		keys = append(keys, info.Key)
	}
	return keys
}

func walked(s *Snapshot, limit int) []string {
	var keys []string
	s.Walk(func(info *workload.Info) bool {
		keys = append(keys, info.Key)
		return len(keys) < limit
	})
	return keys
}

// A snapshot counts every waiting workload, whatever the scheduler is
// doing with it: one popped by a cycle and one set aside keep their
// places, and the walk of the buckets' heaps gives the order a full sort
// would.
func TestSnapshotOrder(t *testing.T) {
	m := NewManager()
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
	var all []*workload.Info
	for i := range 40 {
		// Four shapes (buckets), three priorities, times out of order.
		w := utiltesting.MakeWorkload(fmt.Sprintf("w%02d", i), fmt.Sprintf("ns%d", i%3)).
			Created(time.Duration((i*7)%11)*time.Second).Priority(int32(i%3)).Request(1, "cpu", fmt.Sprint(1+i%4)).Obj()
		if err := m.AddOrUpdateWorkload(w, "q"); err != nil {
			t.Fatal(err)
		}
		all = append(all, workload.NewInfo(w))
	}
	Sort(all)
	heads := m.Heads(nil, nil)
	m.Requeue(heads[0], RequeueInadmissible)
	m.Heads(nil, nil) // the next head is in flight
	s, ok := m.Snapshot("q")
	if !ok {
		t.Fatal("q unknown")
	}
	if s.Len() != 40 {
		t.Errorf("Len() = %d, want 40", s.Len())
	}
	if diff := cmp.Diff(keysOf(all), walked(s, 1000)); diff != "" {
		t.Errorf("walk (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(keysOf(all[:5]), walked(s, 5)); diff != "" {
		t.Errorf("first five (-want +got):\n%s", diff)
	}
	ns1 := s.Select(func(info *workload.Info) bool { return info.Obj.Namespace == "ns1" })
	var want []string
	var wantBefore []int
	for i, info := range all {
		if info.Obj.Namespace == "ns1" {
			want = append(want, info.Key)
			wantBefore = append(wantBefore, i)
		}
	}
	if diff := cmp.Diff(want, keysOf(ns1)); diff != "" {
		t.Errorf("select (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantBefore, s.Before(ns1)); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if _, ok := m.Snapshot("unknown"); ok {
		t.Error("an unknown ClusterQueue reported as known")
	}
}

// With admission fair sharing, the walk follows the LocalQueues' shares.
func TestSnapshotOrderByShare(t *testing.T) {
	s := &Snapshot{cmp: byShare(func(lq string) float64 { return map[string]float64{"a/q": 2, "b/q": 1}[lq] })}
	var all []*workload.Info
	for i, ns := range []string{"a", "b", "a", "b"} {
		info := workload.NewInfo(utiltesting.MakeWorkload(fmt.Sprint("w", i), ns).Queue("q").Created(time.Duration(i) * time.Second).Obj())
		s.heaps = append(s.heaps, []*workload.Info{info})
		s.n++
		all = append(all, info)
	}
	if diff := cmp.Diff([]string{"b/w1", "b/w3", "a/w0", "a/w2"}, walked(s, 10)); diff != "" {
		t.Errorf("walk (-want +got):\n%s", diff)
	}
	_ = all
}

// BenchmarkSnapshot is the cost behind the visibility API's first pages on
// a ClusterQueue with 50,000 waiting workloads from 100 LocalQueues: the
// copy, then the first 100 of the ClusterQueue, or of one LocalQueue with
// their positions in the ClusterQueue; and, for comparison, a sort of the
// whole queue.
func BenchmarkSnapshot(b *testing.B) {
	m := NewManager()
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("q").Obj())
	for i := range 50_000 {
		w := utiltesting.MakeWorkload(fmt.Sprintf("w%d", i), fmt.Sprintf("ns%d", i%100)).
			Created(time.Duration(i%977)*time.Second).Priority(int32(i%7)).Request(1, "cpu", fmt.Sprint(1+i%5)).Obj()
		if err := m.AddOrUpdateWorkload(w, "q"); err != nil {
			b.Fatal(err)
		}
	}
	var cq berthv1alpha1.ClusterQueueReference = "q"
	b.Run("clusterqueue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, _ := m.Snapshot(cq)
			if got := walked(s, 100); len(got) != 100 {
				b.Fatalf("%d workloads", len(got))
			}
		}
	})
	// What the walk saves: the whole queue sorted, as kubectl berth does
	// when the visibility API is not served.
	b.Run("sort", func(b *testing.B) {
		s, _ := m.Snapshot(cq)
		all := s.Select(func(*workload.Info) bool { return true })
		rng := rand.New(rand.NewPCG(1, 2))
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		b.ReportAllocs()
		for b.Loop() {
			Sort(slices.Clone(all))
		}
	})
	b.Run("localqueue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, _ := m.Snapshot(cq)
			mine := s.Select(func(info *workload.Info) bool { return info.Obj.Namespace == "ns7" })
			if len(mine) > 100 {
				mine = mine[:100]
			}
			if got := s.Before(mine); len(got) != 100 {
				b.Fatalf("%d workloads", len(got))
			}
		}
	})
}
