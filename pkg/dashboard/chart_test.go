package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestChartsTellTheHistory: an hour of one ClusterQueue, from what its
// Workloads' conditions say, at ten-minute steps: first ran 4 GPUs from
// -40m to -20m after waiting 10 minutes; second waited from -30m and has
// run 8 since -10m; third waits since -5m.
func TestChartsTellTheHistory(t *testing.T) {
	now := utiltesting.BaseTime.Add(time.Hour)
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	lives := []life{
		{created: ago(50), admit: &held{from: ago(40), to: ago(20), usage: resources.Requests{"nvidia.com/gpu": 4}}},
		{created: ago(30), admit: &held{from: ago(10), usage: resources.Requests{"nvidia.com/gpu": 8}}},
		{created: ago(5)},
	}
	var at []time.Time
	for m := 60; m >= 0; m -= 10 {
		at = append(at, ago(m))
	}
	if diff := cmp.Diff([]float64{0, 0, 4, 4, 0, 8, 8}, usedOver(lives, at, "nvidia.com/gpu")); diff != "" {
		t.Errorf("GPUs in use at -60m, -50m ... 0 (-want +got):\n%s", diff)
	}
	waiting, p50, _ := waitingOver(lives, at)
	if diff := cmp.Diff([]float64{0, 1, 0, 1, 1, 0, 1}, waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
	// first was admitted in (-50m, -40m] after 600 s, second in (-20m,
	// -10m] after 1200 s.
	if diff := cmp.Diff([]float64{0, 0, 600, 0, 0, 1200, 0}, p50); diff != "" {
		t.Errorf("median wait (-want +got):\n%s", diff)
	}
}

// A Workload's conditions tell its admission: still held, released when
// it finished, or not told at all once it was evicted.
func TestHeldBy(t *testing.T) {
	adm := &berthv1alpha1.Admission{ClusterQueue: "gpu", PodSetAssignments: []berthv1alpha1.PodSetAssignment{{
		Name: "main", Count: ptr.To[int32](2), Flavors: map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{"nvidia.com/gpu": "h100"},
		ResourceUsage: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
	}}}
	running := utiltesting.MakeWorkload("running", "a").Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", 10*time.Second).Obj()
	running.Status.Admission = adm
	done := utiltesting.MakeWorkload("done", "a").
		Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, "Finished", 30*time.Second).
		Condition(berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", 10*time.Second).
		Condition(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, "Succeeded", 30*time.Second).Obj()
	done.Status.Admission = adm
	evicted := utiltesting.MakeWorkload("evicted", "a").Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, "Preempted", 20*time.Second).Obj()
	evicted.Status.Admission = adm
	base := utiltesting.BaseTime
	for _, tc := range []struct {
		wl       *berthv1alpha1.Workload
		from, to time.Time
		none     bool
	}{
		{wl: running, from: base.Add(10 * time.Second)},
		{wl: done, from: base.Add(10 * time.Second), to: base.Add(30 * time.Second)},
		{wl: evicted, none: true},
	} {
		h := heldBy(tc.wl)
		if tc.none != (h == nil) || (h != nil && (!h.from.Equal(tc.from) || !h.to.Equal(tc.to) || h.usage["nvidia.com/gpu"] != 8)) {
			t.Errorf("%s: %+v", tc.wl.Name, h)
		}
	}
}

func TestLineChartEscapesAndScales(t *testing.T) {
	at := []time.Time{utiltesting.BaseTime, utiltesting.BaseTime.Add(time.Minute), utiltesting.BaseTime.Add(2 * time.Minute)}
	svg := string(lineChart(`<b>"x"</b>`, at, func(v float64) string { return "v" }, series{"used", []float64{0, 5, 10}}))
	for _, want := range []string{`<title>&lt;b&gt;&#34;x&#34;&lt;/b&gt;</title>`, `points="70.0,130.0 310.0,75.0 550.0,20.0"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %s:\n%s", want, svg)
		}
	}
}
