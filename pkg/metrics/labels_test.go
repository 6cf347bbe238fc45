package metrics

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// TestCustomLabels: the queue series carry the custom labels from the
// queue's own labels; a relabelled queue's series start again with the new
// values, none left with the old; a LocalQueue that stops using a flavor
// loses its series.
func TestCustomLabels(t *testing.T) {
	configure(configv1alpha1.Metrics{CustomLabels: []configv1alpha1.MetricLabel{{Name: "team"}, {Name: "cost", SourceLabelKey: "example.com/cost"}}})
	t.Cleanup(func() { configure(configv1alpha1.Metrics{}) })

	SetClusterQueueLabels("cq", map[string]string{"team": "vision", "example.com/cost": "c1"})
	if got, want := CQ("cq", "active"), []string{"cq", "active", "vision", "c1"}; !equal(got, want) {
		t.Errorf("CQ() = %v, want %v", got, want)
	}
	if got, want := CQ("unseen"), []string{"unseen", "", ""}; !equal(got, want) {
		t.Errorf("CQ() of a queue not seen = %v, want %v", got, want)
	}
	AdmittedWorkloads.WithLabelValues(CQ("cq")...).Inc()
	PendingWorkloads.WithLabelValues(CQ("cq", "active")...).Set(3)
	SetClusterQueueLabels("cq", map[string]string{"team": "speech", "example.com/cost": "c1"})
	if n := testutil.CollectAndCount(AdmittedWorkloads) + testutil.CollectAndCount(PendingWorkloads); n != 0 {
		t.Errorf("%d series left with the old team", n)
	}
	AdmittedWorkloads.WithLabelValues(CQ("cq")...).Inc()
	if v := testutil.ToFloat64(AdmittedWorkloads.WithLabelValues("cq", "speech", "c1")); v != 1 {
		t.Errorf("admissions under the new team = %v, want 1", v)
	}

	st := LocalQueueState{Active: 1, Usage: map[string]map[string]float64{"h100": {"nvidia.com/gpu": 8}, "a100": {"nvidia.com/gpu": 4}}}
	SetLocalQueue("ns", "main", map[string]string{"team": "vision"}, st)
	if n := testutil.CollectAndCount(LocalQueueResourceUsage); n != 2 {
		t.Fatalf("%d usage series, want 2", n)
	}
	st.Usage = map[string]map[string]float64{"h100": {"nvidia.com/gpu": 8}}
	SetLocalQueue("ns", "main", map[string]string{"team": "vision"}, st)
	if n := testutil.CollectAndCount(LocalQueueResourceUsage); n != 1 {
		t.Errorf("%d usage series once a100 is unused, want 1", n)
	}
	if v := testutil.ToFloat64(LocalQueueResourceUsage.WithLabelValues("ns", "main", "h100", "nvidia.com/gpu", "vision", "")); v != 8 {
		t.Errorf("h100 usage = %v, want 8", v)
	}
	LocalQueueDeleted("ns", "main")
	if n := testutil.CollectAndCount(LocalQueueResourceUsage) + testutil.CollectAndCount(LocalQueuePendingWorkloads); n != 0 {
		t.Errorf("%d series left of a deleted LocalQueue", n)
	}
}

func equal(a, b []string) bool { return slices.Equal(a, b) }
