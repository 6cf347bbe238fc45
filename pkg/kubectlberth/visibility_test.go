package kubectlberth

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	visibilityv1alpha1 "github.com/berth-dev/berth/apis/visibility/v1alpha1"
)

// servedLQ is a LocalQueue team-a/main of 1,500 pending workloads, every
// other one of the ClusterQueue gpu: what the visibility API would serve,
// a page at a time.
func servedLQ(t *testing.T, calls *int) pendingPage {
	return func(_ context.Context, path string, offset, limit int) (*visibilityv1alpha1.PendingWorkloadsSummary, error) {
		*calls++
		if path != "namespaces/team-a/localqueues/main/pendingworkloads" {
			return nil, errors.New("the server could not find the requested resource")
		}
		s := &visibilityv1alpha1.PendingWorkloadsSummary{ClusterQueue: "gpu", PendingInClusterQueue: 3000, PendingInLocalQueue: 1500}
		for i := offset; i < min(1500, offset+limit); i++ {
			s.Items = append(s.Items, visibilityv1alpha1.PendingWorkload{
				Namespace: "team-a", Name: fmt.Sprint("w", i), LocalQueueName: "main",
				PositionInLocalQueue: int32(i + 1), PositionInClusterQueue: int32(2*i + 2),
			})
		}
		return s, nil
	}
}

func TestServedQueueReadsEveryPage(t *testing.T) {
	calls := 0
	o := &options{pending: servedLQ(t, &calls)}
	s, ok := o.servedQueue(t.Context(), "team-a", "main")
	if !ok || len(s.Items) != 1500 || calls != 2 {
		t.Fatalf("ok %v, %d items in %d calls; want 1500 in 2", ok, len(s.Items), calls)
	}
	if s.Items[1499].PositionInLocalQueue != 1500 {
		t.Errorf("last item %+v", s.Items[1499])
	}
	if _, ok := o.servedQueue(t.Context(), "", "gpu"); ok {
		t.Error("a refused read counted as served")
	}
	if _, ok := (&options{pending: notServed}).servedQueue(t.Context(), "team-a", "main"); ok {
		t.Error("an API that is not served counted as served")
	}
}

// A namespace's user learns its place in the ClusterQueue, the names of
// its own LocalQueue's workloads ahead and only the count of the others.
func TestServedWhy(t *testing.T) {
	calls := 0
	o := &options{pending: servedLQ(t, &calls)}
	why := Why{Workload: "w2", Ahead: []Ahead{{Namespace: "team-a", Name: "w0", Requests: map[string]string{"nvidia.com/gpu": "8"}}}}
	if !o.servedWhy(t.Context(), &why, "team-a", "main") {
		t.Fatal("not served")
	}
	if *why.PositionInLocalQueue != 3 || *why.PositionInClusterQueue != 6 || why.AheadElsewhere != 3 {
		t.Errorf("positions %d, %d, elsewhere %d; want 3, 6, 3", *why.PositionInLocalQueue, *why.PositionInClusterQueue, why.AheadElsewhere)
	}
	want := []Ahead{{Namespace: "team-a", Name: "w0", Requests: map[string]string{"nvidia.com/gpu": "8"}}, {Namespace: "team-a", Name: "w1"}}
	if diff := cmp.Diff(want, why.Ahead); diff != "" {
		t.Errorf("ahead (-want +got):\n%s", diff)
	}
	missing := Why{Workload: "not-there"}
	if o.servedWhy(t.Context(), &missing, "team-a", "main") || missing.PositionInClusterQueue != nil {
		t.Errorf("a workload the API does not hold: %+v", missing)
	}
}
