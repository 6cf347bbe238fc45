package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestFeedKeepsTheLatest admits 130 workloads in two namespaces through
// the Workload informer's handler: the feed holds the latest 100, newest
// first, and a namespace's view holds that namespace's only.
func TestFeedKeepsTheLatest(t *testing.T) {
	f := NewFeed()
	h := f.Handler(&berthv1alpha1.Workload{})
	for i := range 130 {
		ns := []string{"a", "b"}[i%2]
		name := fmt.Sprint("w", i)
		pending := utiltesting.MakeWorkload(name, ns).Queue("main").Request(1, "nvidia.com/gpu", "1").Obj()
		admitted := utiltesting.MakeWorkload(name, ns).Queue("main").Request(1, "nvidia.com/gpu", "1").AdmittedIn("team-"+ns, "h100").Obj()
		h.OnUpdate(pending, admitted)
		h.OnUpdate(admitted, admitted)
	}
	names := func(hs []Happening) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Namespace+"/"+h.Name)
		}
		return out
	}
	all, generation := f.happenings("")
	if generation != 260 {
		t.Errorf("generation %d, want 260: every event is a change", generation)
	}
	var want []string
	for i := 129; i >= 30; i-- {
		want = append(want, []string{"a", "b"}[i%2]+"/"+fmt.Sprint("w", i))
	}
	if diff := cmp.Diff(want, names(all)); diff != "" {
		t.Errorf("the feed (-want +got):\n%s", diff)
	}
	inA, _ := f.happenings("a")
	if len(inA) != 50 || inA[0].Name != "w128" || inA[49].Name != "w30" {
		t.Errorf("namespace a's feed: %v", names(inA))
	}
}

// TestFeedTellsOncePerChange: a subscriber is told once of many changes
// that come together, and not again until the next.
func TestFeedTellsOncePerChange(t *testing.T) {
	f := NewFeed()
	ctx := t.Context()
	go f.Run(ctx)
	changed, cancel := f.subscribe()
	defer cancel()
	h := f.Handler(&berthv1alpha1.ClusterQueue{})
	for range 50 {
		h.OnAdd(&berthv1alpha1.ClusterQueue{}, false)
	}
	select {
	case <-changed:
	case <-time.After(10 * coalesce):
		t.Fatal("not told of the changes")
	}
	select {
	case <-changed:
		t.Fatal("told twice of one burst of changes")
	case <-time.After(3 * coalesce):
	}
}

// BenchmarkFeedAdmission is what the controller's Workload informer pays
// for the dashboard on each admission: the update compared for what
// happened and the happening kept.
func BenchmarkFeedAdmission(b *testing.B) {
	f := NewFeed()
	h := f.Handler(&berthv1alpha1.Workload{})
	pending := utiltesting.MakeWorkload("w", "a").Queue("main").Request(1, "nvidia.com/gpu", "1").Obj()
	admitted := utiltesting.MakeWorkload("w", "a").Queue("main").Request(1, "nvidia.com/gpu", "1").AdmittedIn("team-a", "h100").Obj()
	b.ReportAllocs()
	for b.Loop() {
		h.OnUpdate(pending, admitted)
	}
}
