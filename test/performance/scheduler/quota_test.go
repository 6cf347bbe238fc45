package scheduler

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// auditScenario is one cohort of two ClusterQueues, cq-a and cq-b, each
// with 10 cpu of nominal quota and 5 it may borrow.
func auditScenario() *Scenario {
	set := &QueuesSet{NominalQuota: resource.MustParse("10"), BorrowingLimit: ptr.To(resource.MustParse("5"))}
	return &Scenario{
		Cohorts: []Cohort{{Name: "c", CapacityMilli: 20000}},
		Queues:  []Queue{{Name: "cq-a", Cohort: "c", Set: set}, {Name: "cq-b", Cohort: "c", Set: set}},
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
func versionsOf(t *testing.T, milli map[string]int64, writes []write) []quotaVersion {
	t.Helper()
	var out []quotaVersion
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
			got := AuditQuota(auditScenario(), versions)
			if got.Violations != tc.violations || got.PeakCohortPercent != tc.peak || !strings.Contains(got.FirstViolation, tc.first) {
				t.Errorf("audit %+v, want %d violations, peak %v%%, first containing %q", got, tc.violations, tc.peak, tc.first)
			}
			if tc.first == "" && got.FirstViolation != "" {
				t.Errorf("unexpected violation: %s", got.FirstViolation)
			}
		})
	}
}

// TestRecorderAuditsUntilTheWatchListsAgain feeds a recorder an
// over-quota admission and checks that the summary and the targets report
// it, then that versions after a failed watch are left out of the audit.
func TestRecorderAuditsUntilTheWatchListsAgain(t *testing.T) {
	s := auditScenario()
	s.Workloads = []Planned{
		{Namespace: "cq-a", Name: "big", RequestMilli: 16000, Runtime: time.Hour},
		{Namespace: "cq-b", Name: "late", RequestMilli: 16000, Runtime: time.Hour},
	}
	r := NewRecorder(context.Background(), nil, s)
	r.Start(time.Now())
	admit := func(name, cq, rv string) {
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: cq, Name: name, ResourceVersion: rv}}
		wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: berthv1alpha1.ClusterQueueReference(cq)}
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"})
		r.observe(wl)
	}
	admit("big", "cq-a", "7")
	r.WatchRestarted(errors.New("too old resource version"))
	// Over the cohort's capacity, but after the watch failed.
	admit("late", "cq-b", "9")
	for _, rec := range r.records {
		if rec.timer != nil {
			rec.timer.Stop()
		}
	}
	res := r.Result()
	if res.Quota.Versions != 1 || res.Quota.Violations != 1 || !strings.Contains(res.Quota.Incomplete, "too old resource version") {
		t.Fatalf("audit %+v, want the one version before the failed watch, over cq-a's limit, and the audit marked incomplete", res.Quota)
	}
	misses := Check(&Summary{Scale: 1, Quota: res.Quota}, nil)
	if len(misses) != 1 || !strings.Contains(misses[0], "quota.violations is 1") || !strings.Contains(misses[0], "cq-a/big") {
		t.Errorf("perf check says %q, want the quota violation of cq-a/big", misses)
	}
}

// TestRecorderStopsTheAuditWhenTheInformerListsAgain: an update whose old
// and new objects have the same version is the informer listing again,
// which may have skipped versions; the audit stops there even though no
// watch error was reported. An update with a new version does not stop it.
func TestRecorderStopsTheAuditWhenTheInformerListsAgain(t *testing.T) {
	s := auditScenario()
	s.Workloads = []Planned{{Namespace: "cq-a", Name: "w", RequestMilli: 1000, Runtime: time.Hour}}
	r := NewRecorder(context.Background(), nil, s)
	r.Start(time.Now())
	h := r.Handler()
	version := func(rv string) *berthv1alpha1.Workload {
		return &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "cq-a", Name: "w", ResourceVersion: rv}}
	}
	h.OnAdd(version("3"), false)
	h.OnUpdate(version("3"), version("5"))
	if res := r.Result(); res.Quota.Incomplete != "" || res.Quota.Versions != 2 {
		t.Fatalf("after updates with new versions: audit %+v, want 2 versions, complete", res.Quota)
	}
	h.OnUpdate(version("5"), version("5"))
	h.OnUpdate(version("5"), version("8"))
	if res := r.Result(); !strings.Contains(res.Quota.Incomplete, "without a new version") || res.Quota.Versions != 2 {
		t.Errorf("after an update without a new version: audit %+v, want the 2 versions before it, marked incomplete", res.Quota)
	}
}

// TestNotifyRelists: the informer's first list is its start; every later
// one, a List or a list streamed as a watch, is a relist, which client-go
// makes after an expired watch without calling the watch error handler.
func TestNotifyRelists(t *testing.T) {
	var calls []string
	inner := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
			return &berthv1alpha1.WorkloadList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	lw := toolscache.ToListerWatcherWithContext(notifyRelists(inner, func(err error) { calls = append(calls, err.Error()) }))
	// Client-go's default: the first list streamed as a watch, then plain
	// watches, then a list again, one of each kind.
	for _, opts := range []metav1.ListOptions{{SendInitialEvents: ptr.To(true)}, {ResourceVersion: "12"}, {SendInitialEvents: ptr.To(true)}} {
		if _, err := lw.WatchWithContext(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"the informer listed the Workloads again (list 2)", "the informer listed the Workloads again (list 3)"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("relists (-want +got):\n%s", diff)
	}
}
