package scheduler

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// record is what the recorder knows of one workload.
type record struct {
	planned *Planned
	// All times are since the run's start.
	created time.Duration
	// firstAdmittedAt is the first admission; admittedAt the latest.
	firstAdmittedAt time.Duration
	admittedAt      time.Duration
	admitted        bool
	finishing       bool
	finished        bool
	finishedAt      time.Duration
	evictions       int
	timer           *time.Timer
	periods         []Period
	// latest is the workload as last observed, the informer's object.
	latest *berthv1alpha1.Workload
	// admission counts the admissions observed; requeues is the
	// workload's requeue count at the latest.
	admission int
	requeues  int32
	// observed, when set, is closed at the next event: a finish waits on
	// it for a newer version.
	observed chan struct{}
}

// everAdmitted reports whether the workload was admitted at least once.
func (rec *record) everAdmitted() bool {
	return rec.admitted || rec.finished || rec.evictionCount() > 0
}

// evictionCount is how often the workload was evicted: the evictions the
// recorder saw, or the workload's requeue count if that is higher. Berth
// requeues a workload that no job owns, as here, in the write that evicts
// it, and counts that in its status. The watch shows every version, but
// when the API server closes a watch that fell behind and the version it
// was at has left the server's watch cache, the informer lists again and
// shows only the latest version: an eviction and admission between two
// versions the recorder saw are then only in that count.
func (rec *record) evictionCount() int {
	if rec.latest == nil {
		return rec.evictions
	}
	return max(rec.evictions, int(requeues(rec.latest)))
}

// Recorder watches Workloads, records admissions and evictions, and
// finishes each admitted workload its runtime after the admission was
// observed, as a job integration would when the job's pods end.
type Recorder struct {
	writer   workloadwriter.Writer
	scenario *Scenario
	start    time.Time
	ctx      context.Context
	// finishing holds a slot per Finished write under way, when
	// LimitFinishes bounds them.
	finishing chan struct{}

	mu        sync.Mutex
	records   map[types.NamespacedName]*record
	remaining int
	done      chan struct{}
	errs      []error
	// versions are the Workload versions observed, for the quota audit,
	// until auditStopped says why no more could be trusted.
	versions     []quotaVersion
	auditStopped string
}

// NewRecorder records the workloads of s; c writes the Finished
// conditions.
func NewRecorder(ctx context.Context, w workloadwriter.Writer, s *Scenario) *Recorder {
	r := &Recorder{writer: w, scenario: s, ctx: ctx, records: map[types.NamespacedName]*record{}, done: make(chan struct{})}
	for i := range s.Workloads {
		p := &s.Workloads[i]
		r.records[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = &record{planned: p}
	}
	r.remaining = len(s.Workloads)
	return r
}

// LimitFinishes lets at most n Finished writes be under way at once, as a
// job integration's workers would (Kueue's runner finishes workloads from
// a single reconciler). Without a bound, a run with thousands of workloads
// running at once sends the API server thousands of writes together when
// it is slowest to answer them. Call it before Start.
func (r *Recorder) LimitFinishes(n int) {
	if n > 0 {
		r.finishing = make(chan struct{}, n)
	}
}

// Start sets the run's start: every time is measured from it.
func (r *Recorder) Start(t time.Time) { r.start = t }

// Created records that the create request of p is about to be sent.
func (r *Recorder) Created(p *Planned, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}].created = at.Sub(r.start)
}

// Done is closed when every workload has finished.
func (r *Recorder) Done() <-chan struct{} { return r.done }

// Handler is the informer event handler that feeds the recorder.
func (r *Recorder) Handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.observe(obj) },
		UpdateFunc: func(old, obj any) {
			if relisted(old, obj) {
				r.WatchRestarted(errors.New("an update of a Workload came without a new version"))
			}
			r.observe(obj)
		},
	}
}

// relisted tells whether an update's old and new objects have the same
// version: the informer listed again (the runner's has no resync) and
// hands over every Workload as an update, whether the error that made it
// list again reached the watch error handler or not.
func relisted(old, obj any) bool {
	o, ok1 := old.(*berthv1alpha1.Workload)
	n, ok2 := obj.(*berthv1alpha1.Workload)
	return ok1 && ok2 && o.ResourceVersion == n.ResourceVersion
}

func (r *Recorder) observe(obj any) {
	wl, ok := obj.(*berthv1alpha1.Workload)
	if !ok {
		return
	}
	now := time.Since(r.start)
	running := runs(wl)
	key := client.ObjectKeyFromObject(wl)
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.records[key]
	if rec == nil {
		return
	}
	rec.latest = wl
	if r.auditStopped == "" {
		if v, ok := holding(wl, rec.planned.RequestMilli, now); ok {
			r.versions = append(r.versions, v)
		}
	}
	if rec.observed != nil {
		close(rec.observed)
		rec.observed = nil
	}
	if rec.finished {
		return
	}
	if workload.IsFinished(wl) && rec.admitted {
		// The Finished write is seen before its answer came.
		r.finished(rec, now)
		return
	}
	// Evicted, and perhaps admitted again since: a job would stop its pods
	// now, a Finished write under way included, and run its whole runtime
	// again once admitted again.
	if rec.admitted && (!running || requeues(wl) != rec.requeues) {
		rec.evicted(now)
	}
	if running && !rec.admitted {
		rec.admission++
		rec.admitted, rec.admittedAt, rec.requeues = true, now, requeues(wl)
		if rec.evictions == 0 {
			rec.firstAdmittedAt = now
		}
		admission := rec.admission
		rec.timer = time.AfterFunc(rec.planned.Runtime, func() { r.finish(key, rec, admission) })
	}
}

// WatchRestarted records that the watch failed with err and its
// informer lists the Workloads again: the versions written since the last
// one seen may never be shown, so the quota audit stops there.
func (r *Recorder) WatchRestarted(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.auditStopped == "" && len(r.versions) > 0 {
		r.auditStopped = fmt.Sprintf("the runner's watch failed %s after the start and listed again: %v", time.Since(r.start).Round(time.Millisecond), err)
	}
}

// runs reports whether wl is admitted and neither evicted nor finished.
func runs(wl *berthv1alpha1.Workload) bool {
	return workload.IsAdmitted(wl) && wl.Status.Admission != nil && !workload.IsEvicted(wl) && !workload.IsFinished(wl)
}

// requeues is how often wl was requeued after an eviction.
func requeues(wl *berthv1alpha1.Workload) int32 {
	if wl.Status.RequeueState == nil || wl.Status.RequeueState.Count == nil {
		return 0
	}
	return *wl.Status.RequeueState.Count
}

// evicted records that the admitted workload was evicted.
func (rec *record) evicted(now time.Duration) {
	rec.timer.Stop()
	rec.admitted, rec.finishing = false, false
	rec.evictions++
	rec.periods = append(rec.periods, Period{Start: rec.admittedAt, End: now, Milli: rec.planned.RequestMilli})
}

// finish marks the workload finished, if it still runs its admission-th
// admission, as Berth's job integrations do (workload.Finish): a write of its
// status bound to the version last observed. When the API server has a
// newer version it waits for the watch to bring it: the workload was
// evicted, most likely, and then the eviction ends the finish.
func (r *Recorder) finish(key types.NamespacedName, rec *record, admission int) {
	r.mu.Lock()
	if !rec.admitted || rec.finishing || rec.admission != admission {
		r.mu.Unlock()
		return
	}
	rec.finishing = true
	r.mu.Unlock()
	// current is the version to write from, while the finish is still
	// due. Given the version that conflicted, it waits for a newer one.
	current := func(stale string) *berthv1alpha1.Workload {
		r.mu.Lock()
		defer r.mu.Unlock()
		for rec.finishing && rec.admission == admission && rec.latest.ResourceVersion == stale {
			if rec.observed == nil {
				rec.observed = make(chan struct{})
			}
			observed := rec.observed
			r.mu.Unlock()
			select {
			case <-observed:
			case <-r.ctx.Done():
			}
			r.mu.Lock()
			if r.ctx.Err() != nil {
				return nil
			}
		}
		if !rec.finishing || rec.admission != admission {
			return nil
		}
		if !runs(rec.latest) {
			rec.evicted(time.Since(r.start))
			return nil
		}
		return rec.latest
	}

	var err error
	stale := ""
	for failures := 0; failures < 5 && r.ctx.Err() == nil; {
		wl := current(stale)
		if wl == nil {
			return
		}
		if err = r.writeFinished(wl); err == nil {
			break
		}
		stale = ""
		if apierrors.IsConflict(err) {
			stale = wl.ResourceVersion
			continue
		}
		failures++
		time.Sleep(100 * time.Millisecond)
	}
	now := time.Since(r.start)

	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.finished || !rec.finishing || rec.admission != admission {
		return
	}
	if err == nil {
		err = r.ctx.Err()
	}
	if err != nil {
		rec.finishing = false
		r.errs = append(r.errs, fmt.Errorf("finishing %s: %w", key, err))
		return
	}
	r.finished(rec, now)
}

// writeFinished writes wl's Finished condition, in one of LimitFinishes's
// slots if it set any.
func (r *Recorder) writeFinished(wl *berthv1alpha1.Workload) error {
	if r.finishing != nil {
		select {
		case r.finishing <- struct{}{}:
			defer func() { <-r.finishing }()
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
	_, err := workloadwriter.Apply(r.ctx, r.writer, wl, workload.Finish("Succeeded", "The benchmark's job ran its runtime"))
	return err
}

// finished records that the running workload finished. Call it locked.
func (r *Recorder) finished(rec *record, now time.Duration) {
	rec.timer.Stop()
	rec.finished, rec.finishing, rec.finishedAt = true, false, now
	rec.periods = append(rec.periods, Period{Start: rec.admittedAt, End: now, Milli: rec.planned.RequestMilli})
	r.remaining--
	if r.remaining == 0 {
		close(r.done)
	}
}

// Counts are how many workloads are in each state at one moment.
type Counts struct {
	Created int
	// Admitted were admitted at least once.
	Admitted  int
	Running   int
	Finished  int
	Evictions int
}

// Counts counts the workloads by state now.
func (r *Recorder) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n Counts
	for _, rec := range r.records {
		if rec.created > 0 || rec.admitted || rec.finished {
			n.Created++
		}
		if rec.everAdmitted() {
			n.Admitted++
		}
		if rec.admitted && !rec.finished {
			n.Running++
		}
		if rec.finished {
			n.Finished++
		}
		n.Evictions += rec.evictionCount()
	}
	return n
}

// Progress are logger key-value pairs counting the workloads per state.
func (r *Recorder) Progress() []any {
	n := r.Counts()
	r.mu.Lock()
	defer r.mu.Unlock()
	return []any{"elapsed", time.Since(r.start).Round(time.Millisecond).String(), "created", n.Created, "running", n.Running,
		"finished", n.Finished, "of", len(r.records), "evictions", n.Evictions, "errors", len(r.errs)}
}

// Result is what the recorder measured.
type Result struct {
	// Wall is from the start to the last finish.
	Wall time.Duration
	// WaitByClass is each finished workload's time from creation to its
	// last admission, by class.
	WaitByClass map[string][]time.Duration
	Periods     []Period
	Admissions  int
	Evictions   int
	// Unfinished workloads were not finished when the run stopped; Wall
	// is then the time until the run stopped.
	Unfinished int
	// Stuck names a few unfinished workloads, for the error message.
	Stuck  []string
	Errors []error
	// Quota is the audit of the quota held at every version observed.
	Quota QuotaAudit
}

// Result returns what was measured so far.
func (r *Recorder) Result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{WaitByClass: map[string][]time.Duration{}, Errors: r.errs}
	for _, rec := range r.records {
		res.Periods = append(res.Periods, rec.periods...)
		if rec.admitted && !rec.finished {
			// Still holding quota when the run stopped.
			res.Periods = append(res.Periods, Period{Start: rec.admittedAt, End: time.Since(r.start), Milli: rec.planned.RequestMilli})
		}
		evictions := rec.evictionCount()
		res.Evictions += evictions
		res.Admissions += evictions
		if !rec.finished {
			res.Unfinished++
			if len(res.Stuck) < 5 {
				res.Stuck = append(res.Stuck, rec.planned.Namespace+"/"+rec.planned.Name)
			}
			continue
		}
		res.Admissions++
		res.Wall = max(res.Wall, rec.finishedAt)
		res.WaitByClass[rec.planned.Class] = append(res.WaitByClass[rec.planned.Class], rec.admittedAt-rec.created)
	}
	if res.Unfinished > 0 {
		res.Wall = time.Since(r.start)
	}
	res.Quota = AuditQuota(r.scenario, r.versions)
	res.Quota.Incomplete = r.auditStopped
	return res
}

// WriteTimeline writes one CSV line per workload, in order of creation:
// when it was created, first admitted, last admitted and finished, in
// milliseconds since the start (empty if it never was), and how often it
// was evicted. It is for reading a run after the fact: which workloads
// waited, and when.
func (r *Recorder) WriteTimeline(w io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := slices.Collect(maps.Values(r.records))
	slices.SortFunc(recs, func(a, b *record) int {
		if c := cmp.Compare(a.created, b.created); c != 0 {
			return c
		}
		return cmpKey(a.planned, b.planned)
	})
	out := csv.NewWriter(w)
	_ = out.Write([]string{"namespace", "name", "class", "cohort", "priority", "requestMilli", "runtimeMs",
		"createdMs", "firstAdmittedMs", "admittedMs", "finishedMs", "evictions"})
	for _, rec := range recs {
		p, admitted := rec.planned, rec.everAdmitted()
		_ = out.Write([]string{p.Namespace, p.Name, p.Class, p.Cohort, strconv.Itoa(int(p.Priority)), strconv.FormatInt(p.RequestMilli, 10),
			millis(p.Runtime, true), millis(rec.created, true), millis(rec.firstAdmittedAt, admitted), millis(rec.admittedAt, admitted),
			millis(rec.finishedAt, rec.finished), strconv.Itoa(rec.evictionCount())})
	}
	out.Flush()
	return out.Error()
}

func cmpKey(a, b *Planned) int {
	if a.Namespace != b.Namespace {
		return strings.Compare(a.Namespace, b.Namespace)
	}
	return strings.Compare(a.Name, b.Name)
}

// millis is d in whole milliseconds, or empty when not known.
func millis(d time.Duration, known bool) string {
	if !known {
		return ""
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}
