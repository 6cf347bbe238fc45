package audit

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

// auditScenario is one cohort of two ClusterQueues, cq-a and cq-b, each
// with 10 cpu of nominal quota and 5 it may borrow.
func auditScenario() *scenario.Scenario {
	set := &scenario.QueuesSet{NominalQuota: resource.MustParse("10"), BorrowingLimit: ptr.To(resource.MustParse("5"))}
	return &scenario.Scenario{
		Cohorts: []scenario.Cohort{{Name: "c", CapacityMilli: 20000}},
		Queues:  []scenario.Queue{{Name: "cq-a", Cohort: "c", Set: set}, {Name: "cq-b", Cohort: "c", Set: set}},
	}
}

// write is one Workload write: the workload name at resourceVersion rv,
// admitted to clusterQueue ("" for none), finished or not.
type write struct {
	name, clusterQueue string
	rv                 int
	finished           bool
}

// versionsOf turns writes into the versions the recorder would keep,
// through holding, every workload requesting milli[name].
func versionsOf(t *testing.T, milli map[string]int64, writes []write) []version {
	t.Helper()
	var out []version
	for _, w := range writes {
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: w.name, ResourceVersion: strconv.Itoa(w.rv)}}
		if w.clusterQueue != "" {
			wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: berthv1alpha1.ClusterQueueReference(w.clusterQueue)}
		}
		if w.finished {
			meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded"})
		}
		v, ok := holding(wl, milli[w.name], time.Duration(w.rv)*time.Millisecond)
		if !ok {
			t.Fatalf("no version for %+v", w)
		}
		out = append(out, v)
	}
	return out
}

func TestAuditQuota(t *testing.T) {
	milli := map[string]int64{"a1": 8000, "a2": 8000, "a3": 15000, "a4": 16000, "a5": 10000, "b1": 10000}
	cases := map[string]struct {
		writes     []write
		violations int
		first      string
		peak       float64
	}{
		"admissions after the quota they use was released": {
			writes: []write{
				{name: "a1", clusterQueue: "cq-a", rv: 1},
				{name: "b1", clusterQueue: "cq-b", rv: 2},
				// Finished, its admission kept: the quota is free.
				{name: "a1", clusterQueue: "cq-a", rv: 3, finished: true},
				{name: "a2", clusterQueue: "cq-a", rv: 4},
				// Evicted and requeued: the admission is cleared.
				{name: "a2", rv: 5},
				// The cohort full.
				{name: "a5", clusterQueue: "cq-a", rv: 6},
			},
			peak: 100,
		},
		"an admission before the finish it counted on": {
			writes: []write{
				{name: "a1", clusterQueue: "cq-a", rv: 1},
				{name: "b1", clusterQueue: "cq-b", rv: 2},
				{name: "a2", clusterQueue: "cq-a", rv: 3},
				{name: "a1", clusterQueue: "cq-a", rv: 4, finished: true},
			},
			violations: 1,
			first:      "after ns/a2 was admitted to cq-a (resourceVersion 3, seen at 3ms), ClusterQueue cq-a held 16000m cpu, above its nominal quota plus borrowing limit of 15000m",
			peak:       130,
		},
		"a cohort held beyond its capacity": {
			writes: []write{
				{name: "b1", clusterQueue: "cq-b", rv: 1},
				{name: "a3", clusterQueue: "cq-a", rv: 2},
			},
			violations: 1,
			first:      "cohort c held 25000m cpu, above its capacity of 20000m",
			peak:       125,
		},
		"a ClusterQueue beyond its borrowing limit": {
			writes: []write{
				{name: "a4", clusterQueue: "cq-a", rv: 1},
			},
			violations: 1,
			first:      "ClusterQueue cq-a held 16000m cpu, above its nominal quota plus borrowing limit of 15000m",
			peak:       80,
		},
		"a version shown twice, as after a list, counts once": {
			writes: []write{
				{name: "a1", clusterQueue: "cq-a", rv: 1},
				{name: "a1", clusterQueue: "cq-a", rv: 1},
				{name: "a2", clusterQueue: "cq-b", rv: 2},
			},
			peak: 80,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			versions := versionsOf(t, milli, tc.writes)
			// The informer may hand over versions of different workloads
			// out of the order they were written.
			rand.Shuffle(len(versions), func(i, j int) { versions[i], versions[j] = versions[j], versions[i] })
			got := auditQuota(auditScenario(), versions)
			if got.Violations != tc.violations || got.PeakCohortPercent != tc.peak || !strings.Contains(got.FirstViolation, tc.first) {
				t.Errorf("audit %+v, want %d violations, peak %v%%, first containing %q", got, tc.violations, tc.peak, tc.first)
			}
			if tc.first == "" && got.FirstViolation != "" {
				t.Errorf("unexpected violation: %s", got.FirstViolation)
			}
		})
	}
}

// TestTrail: the versions recorded before Stop are audited, those after
// are not, and the report says why; a Stop before any version changes
// nothing, since nothing was skipped.
func TestTrail(t *testing.T) {
	admitted := func(name, clusterQueue, rv string) *berthv1alpha1.Workload {
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
		wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: berthv1alpha1.ClusterQueueReference(clusterQueue)}
		return wl
	}
	type step struct {
		wl   *berthv1alpha1.Workload
		stop string
	}
	cases := map[string]struct {
		steps []step
		want  Report
	}{
		"every version recorded": {
			steps: []step{{wl: admitted("a", "cq-a", "1")}, {wl: admitted("b", "cq-b", "2")}},
			want:  Report{Versions: 2, PeakCohortPercent: 80},
		},
		"versions after a stop are left out": {
			steps: []step{{wl: admitted("a", "cq-a", "1")}, {stop: "relisted"}, {wl: admitted("b", "cq-b", "2")}, {stop: "again"}},
			want:  Report{Versions: 1, PeakCohortPercent: 40, Incomplete: "relisted"},
		},
		"a stop before any version skipped nothing": {
			steps: []step{{stop: "first list"}, {wl: admitted("a", "cq-a", "1")}},
			want:  Report{Versions: 1, PeakCohortPercent: 40},
		},
		"a version without a resourceVersion cannot be ordered": {
			steps: []step{{wl: admitted("a", "cq-a", "")}, {wl: admitted("b", "cq-b", "2")}},
			want:  Report{Versions: 1, PeakCohortPercent: 40},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var trail Trail
			for _, s := range tc.steps {
				if s.stop != "" {
					trail.Stop(s.stop)
					continue
				}
				trail.Record(s.wl, 8000, time.Millisecond)
			}
			if diff := cmp.Diff(tc.want, trail.Audit(auditScenario())); diff != "" {
				t.Errorf("Audit() (-want +got):\n%s", diff)
			}
		})
	}
}
