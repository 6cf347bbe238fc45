package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workloadwriter"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

// TestWriteTimeline follows two workloads through a recorder: one
// admitted, evicted and admitted again, one never admitted. The timeline
// lists them in order of creation with the first and the last admission.
func TestWriteTimeline(t *testing.T) {
	s := &scenario.Scenario{Workloads: []scenario.Planned{
		{Namespace: "q1", Name: "small-0", Class: "small", Cohort: "c0", Priority: 50, RequestMilli: 1000, Runtime: time.Hour, Offset: 100 * time.Millisecond},
		{Namespace: "q0", Name: "large-0", Class: "large", Cohort: "c0", Priority: 200, RequestMilli: 20000, Runtime: time.Hour},
	}}
	// No client: the runtimes are an hour, so nothing is finished.
	r := newRecorder(context.Background(), nil, s, 0)
	start := time.Now()
	r.begin(start)
	r.created(&s.Workloads[1], start)
	r.created(&s.Workloads[0], start.Add(100*time.Millisecond))
	large := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "q0", Name: "large-0"}}
	set := func(typ string, status metav1.ConditionStatus) {
		meta.SetStatusCondition(&large.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "Test"})
	}
	large.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "q0"}
	set(berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue)
	r.observe(large.DeepCopy())
	first := r.records[key(large)].admittedAt
	set(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue)
	r.observe(large.DeepCopy())
	time.Sleep(2 * time.Millisecond)
	set(berthv1alpha1.WorkloadEvicted, metav1.ConditionFalse)
	r.observe(large.DeepCopy())
	last := r.records[key(large)].admittedAt
	if last <= first {
		t.Fatalf("the second admission (%v) is not after the first (%v)", last, first)
	}
	r.records[key(large)].timer.Stop()
	if got, want := r.count(), (counts{Created: 2, Admitted: 1, Running: 1, Evictions: 1}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}

	var out strings.Builder
	if err := r.writeTimeline(&out); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"namespace,name,class,cohort,priority,requestMilli,runtimeMs,createdMs,firstAdmittedMs,admittedMs,finishedMs,evictions",
		"q0,large-0,large,c0,200,20000,3600000,0," + ms(first) + "," + ms(last) + ",,1",
		"q1,small-0,small,c0,50,1000,3600000,100,,,,0",
		"",
	}, "\n")
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}

func key(wl *berthv1alpha1.Workload) types.NamespacedName {
	return types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}
}

func ms(d time.Duration) string { return millis(d, true) }

// TestRecorderFinishes: a workload is finished its runtime after its
// admission was observed, with a write bound to the version observed; one
// evicted before that write is not finished, and counts an eviction.
func TestRecorderFinishes(t *testing.T) {
	s := &scenario.Scenario{Workloads: []scenario.Planned{
		{Namespace: "q0", Name: "runs", Runtime: time.Millisecond, RequestMilli: 1000},
		{Namespace: "q0", Name: "evicted", Runtime: time.Hour, RequestMilli: 1000},
		{Namespace: "q0", Name: "raced", Runtime: time.Hour, RequestMilli: 1000},
	}}
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admitted := func(name string) *berthv1alpha1.Workload {
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "q0", Name: name}}
		wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "q0"}
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Test"})
		return wl
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&berthv1alpha1.Workload{}).
		WithObjects(admitted("runs"), admitted("evicted"), admitted("raced")).Build()
	observed := func(name string) *berthv1alpha1.Workload {
		wl := &berthv1alpha1.Workload{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "q0", Name: name}, wl); err != nil {
			t.Fatal(err)
		}
		return wl
	}
	r := newRecorder(context.Background(), workloadwriter.NewUpdate(c), s, 0)
	r.begin(time.Now())
	r.observe(observed("runs"))
	r.observe(observed("evicted"))

	// Evicted while its finish was due: the recorder missed the event.
	evicted := observed("evicted")
	r.mu.Lock()
	rec := r.records[key(evicted)]
	rec.timer.Stop()
	meta.SetStatusCondition(&evicted.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted"})
	rec.latest = evicted
	r.mu.Unlock()
	r.finish(key(evicted), rec, rec.admission)

	// Evicted on the API server after the recorder saw it admitted: the
	// write conflicts, and the finish waits for the watch to bring the
	// eviction.
	raced := observed("raced")
	r.observe(raced)
	r.mu.Lock()
	racedRec := r.records[key(raced)]
	racedRec.timer.Stop()
	r.mu.Unlock()
	evictedRaced := raced.DeepCopy()
	meta.SetStatusCondition(&evictedRaced.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted"})
	if err := c.Status().Update(context.Background(), evictedRaced); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		r.finish(key(raced), racedRec, racedRec.admission)
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-finished:
		t.Fatal("the finish ended before the eviction was observed")
	default:
	}
	r.observe(observed("raced"))
	<-finished

	deadline := time.Now().Add(10 * time.Second)
	for !workloadFinished(observed("runs")) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !workloadFinished(observed("runs")) {
		t.Fatal("the admitted workload was not finished after its runtime")
	}
	if workloadFinished(observed("evicted")) || workloadFinished(observed("raced")) {
		t.Error("an evicted workload was finished")
	}
	time.Sleep(10 * time.Millisecond)
	if got, want := r.count(), (counts{Created: 1, Admitted: 3, Finished: 1, Evictions: 2}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if len(r.errs) > 0 {
		t.Errorf("errors: %v", r.errs)
	}
}

// TestRecorderLimitsFinishes: with two finishers, six workloads due to
// finish at once are finished by at most two writes under way at a time.
func TestRecorderLimitsFinishes(t *testing.T) {
	s := &scenario.Scenario{}
	var objs []client.Object
	for i := range 6 {
		s.Workloads = append(s.Workloads, scenario.Planned{Namespace: "q0", Name: fmt.Sprint("w", i), Runtime: time.Millisecond, RequestMilli: 1000})
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "q0", Name: fmt.Sprint("w", i)}}
		wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "q0"}
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Test"})
		objs = append(objs, wl)
	}
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var inFlight, most atomic.Int32
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&berthv1alpha1.Workload{}).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(20 * time.Millisecond)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	r := newRecorder(context.Background(), workloadwriter.NewUpdate(c), s, 2)
	r.begin(time.Now())
	for _, obj := range objs {
		r.observe(obj.(*berthv1alpha1.Workload))
	}
	select {
	case <-r.done():
	case <-time.After(10 * time.Second):
		t.Fatalf("not every workload finished: %+v", r.count())
	}
	if got := most.Load(); got > 2 {
		t.Errorf("%d Finished writes were under way at once; want at most 2", got)
	}
	if len(r.errs) > 0 {
		t.Errorf("errors: %v", r.errs)
	}
}

// TestRecorderAwaitsTheWatchBeforeTheAudit: the recorder counts a finish
// when its write is answered; the end of the run waits until the watch has
// shown it, so that the audit replays the Finished version too.
func TestRecorderAwaitsTheWatchBeforeTheAudit(t *testing.T) {
	s := &scenario.Scenario{Workloads: []scenario.Planned{{Namespace: "q0", Name: "w", Runtime: time.Millisecond, RequestMilli: 1000}}}
	wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "q0", Name: "w"}}
	wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "q0"}
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Test"})
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&berthv1alpha1.Workload{}).WithObjects(wl.DeepCopy()).Build()
	r := newRecorder(context.Background(), workloadwriter.NewUpdate(c), s, 0)
	r.begin(time.Now())
	stored := &berthv1alpha1.Workload{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(wl), stored); err != nil {
		t.Fatal(err)
	}
	r.observe(stored)
	select {
	case <-r.done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the workload did not finish: %+v", r.count())
	}
	finished := &berthv1alpha1.Workload{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(wl), finished); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		r.observe(finished)
	}()
	r.awaitFinishesSeen(10 * time.Second)
	if got := r.result().Quota.Versions; got != 2 {
		t.Errorf("the audit replayed %d versions, want 2: the admission and the finish", got)
	}
}

func workloadFinished(wl *berthv1alpha1.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1alpha1.WorkloadFinished)
}

// TestRecorderCountsEvictionsTheWatchSkipped: after the informer lists
// again, the recorder sees only a workload's latest version. Its requeue
// count then says how often it was evicted in between, whether the
// recorder had seen it admitted (twice evicted, once seen) or not (once
// evicted, never seen admitted before).
func TestRecorderCountsEvictionsTheWatchSkipped(t *testing.T) {
	s := &scenario.Scenario{Workloads: []scenario.Planned{
		{Namespace: "q0", Name: "seen", Class: "small", Runtime: time.Hour, RequestMilli: 1000},
		{Namespace: "q0", Name: "unseen", Class: "small", Runtime: time.Hour, RequestMilli: 1000},
	}}
	r := newRecorder(context.Background(), nil, s, 0)
	r.begin(time.Now())
	version := func(name string, admitted bool, requeues int32) *berthv1alpha1.Workload {
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "q0", Name: name}}
		if admitted {
			wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "q0"}
			meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Test"})
		}
		if requeues > 0 {
			wl.Status.RequeueState = &berthv1alpha1.RequeueState{Count: &requeues}
		}
		return wl
	}
	r.observe(version("seen", true, 0))
	r.observe(version("seen", true, 2))
	r.observe(version("unseen", false, 0))
	r.observe(version("unseen", true, 1))
	for _, rec := range r.records {
		rec.timer.Stop()
	}
	if got, want := r.count(), (counts{Created: 2, Admitted: 2, Running: 2, Evictions: 3}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	r.mu.Lock()
	for _, rec := range r.records {
		r.finished(rec, time.Since(r.start))
	}
	r.mu.Unlock()
	if res := r.result(); res.Admissions != 5 || res.Evictions != 3 {
		t.Errorf("admissions %d, evictions %d; want 5 and 3", res.Admissions, res.Evictions)
	}
}

// auditScenario is one cohort of two ClusterQueues, cq-a and cq-b, each
// with 10 cpu of nominal quota and 5 it may borrow.
func auditScenario() *scenario.Scenario {
	set := &scenario.QueuesSet{NominalQuota: resource.MustParse("10"), BorrowingLimit: ptr.To(resource.MustParse("5"))}
	return &scenario.Scenario{
		Cohorts: []scenario.Cohort{{Name: "c", CapacityMilli: 20000}},
		Queues:  []scenario.Queue{{Name: "cq-a", Cohort: "c", Set: set}, {Name: "cq-b", Cohort: "c", Set: set}},
	}
}

// TestRecorderAuditsUntilTheWatchListsAgain feeds a recorder an
// over-quota admission and checks that the summary and the targets report
// it, then that versions after a failed watch are left out of the audit.
func TestRecorderAuditsUntilTheWatchListsAgain(t *testing.T) {
	s := auditScenario()
	s.Workloads = []scenario.Planned{
		{Namespace: "cq-a", Name: "big", RequestMilli: 16000, Runtime: time.Hour},
		{Namespace: "cq-b", Name: "late", RequestMilli: 16000, Runtime: time.Hour},
	}
	r := newRecorder(context.Background(), nil, s, 0)
	r.begin(time.Now())
	admit := func(name, cq, rv string) {
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: cq, Name: name, ResourceVersion: rv}}
		wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: berthv1alpha1.ClusterQueueReference(cq)}
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"})
		r.observe(wl)
	}
	admit("big", "cq-a", "7")
	r.watchRestarted(errors.New("too old resource version"))
	// Over the cohort's capacity, but after the watch failed.
	admit("late", "cq-b", "9")
	for _, rec := range r.records {
		if rec.timer != nil {
			rec.timer.Stop()
		}
	}
	res := r.result()
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
	s.Workloads = []scenario.Planned{{Namespace: "cq-a", Name: "w", RequestMilli: 1000, Runtime: time.Hour}}
	r := newRecorder(context.Background(), nil, s, 0)
	r.begin(time.Now())
	h := r.handler()
	version := func(rv string) *berthv1alpha1.Workload {
		return &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "cq-a", Name: "w", ResourceVersion: rv}}
	}
	h.OnAdd(version("3"), false)
	h.OnUpdate(version("3"), version("5"))
	if res := r.result(); res.Quota.Incomplete != "" || res.Quota.Versions != 2 {
		t.Fatalf("after updates with new versions: audit %+v, want 2 versions, complete", res.Quota)
	}
	h.OnUpdate(version("5"), version("5"))
	h.OnUpdate(version("5"), version("8"))
	if res := r.result(); !strings.Contains(res.Quota.Incomplete, "without a new version") || res.Quota.Versions != 2 {
		t.Errorf("after an update without a new version: audit %+v, want the 2 versions before it, marked incomplete", res.Quota)
	}
}

// TestRecorderMeasuresTheFinishOverhang: how long past its runtime each
// finished workload was seen running, from the runner's sight of its last
// admission; an unfinished one has none.
func TestRecorderMeasuresTheFinishOverhang(t *testing.T) {
	s := &scenario.Scenario{Workloads: []scenario.Planned{
		{Namespace: "q0", Name: "prompt", Runtime: time.Second, RequestMilli: 1000},
		{Namespace: "q0", Name: "late", Runtime: time.Second, RequestMilli: 1000},
		{Namespace: "q0", Name: "running", Runtime: time.Second, RequestMilli: 1000},
	}}
	r := newRecorder(context.Background(), nil, s, 0)
	r.begin(time.Now())
	set := func(name string, admittedAt, finishedAt time.Duration) {
		rec := r.records[types.NamespacedName{Namespace: "q0", Name: name}]
		rec.admitted, rec.admittedAt = true, admittedAt
		if finishedAt > 0 {
			rec.admitted, rec.finished, rec.finishedAt = false, true, finishedAt
		}
	}
	set("prompt", 2*time.Second, 3*time.Second)
	set("late", 2*time.Second, 7*time.Second)
	set("running", 2*time.Second, 0)
	got := newStats(r.result().FinishOverhang)
	if want := (Stats{Count: 2, AvgMs: 2000, P50Ms: 0, P95Ms: 4000, MaxMs: 4000}); got != want {
		t.Errorf("finish overhang %+v, want %+v", got, want)
	}
}
