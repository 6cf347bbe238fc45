package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
	"github.com/berth-dev/berth/test/performance/scheduler/audit"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

// record is what the recorder knows of one workload.
type record struct {
	planned *scenario.Planned
	// All times are since the run's start.
	created time.Duration
	// firstAdmittedAt is the first admission; admittedAt the latest.
	firstAdmittedAt time.Duration
	admittedAt      time.Duration
	// admitted: the watch showed it running, and the recorder has not
	// seen it evicted or finished since. finishing: its Finished write
	// is under way (finish). finished: the write succeeded, or the watch
	// showed it.
	admitted   bool
	finishing  bool
	finished   bool
	finishedAt time.Duration
	evictions  int
	timer      *time.Timer
	periods    []period
	// latest is the workload as last observed, the informer's object.
	latest *berthv1alpha1.Workload
	// admission counts the admissions observed; requeues is the
	// workload's requeue count at the latest.
	admission int
	requeues  int32
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

// recorder watches Workloads, records admissions and evictions, and
// finishes each admitted workload its runtime after the admission was
// observed, as a job integration would when the job's pods end.
type recorder struct {
	writer   workloadwriter.Writer
	scenario *scenario.Scenario
	start    time.Time
	ctx      context.Context
	// slots bounds the Finished writes under way.
	slots slots

	mu sync.Mutex
	// changed is broadcast, with mu held, at every version the watch
	// shows and when ctx ends: a finish waiting for a newer version than
	// the one its write conflicted on waits on it.
	changed     *sync.Cond
	records     map[types.NamespacedName]*record
	remaining   int
	allFinished chan struct{}
	errs        []error
	// trail keeps the Workload versions observed, for the quota audit.
	trail audit.Trail
}

// newRecorder records the workloads of s; w writes the Finished
// conditions, at most finishers at once (0 does not bound them).
func newRecorder(ctx context.Context, w workloadwriter.Writer, s *scenario.Scenario, finishers int) *recorder {
	r := &recorder{
		writer: w, scenario: s, ctx: ctx, slots: newSlots(finishers),
		records: map[types.NamespacedName]*record{}, remaining: len(s.Workloads), allFinished: make(chan struct{}),
	}
	r.changed = sync.NewCond(&r.mu)
	// The registration ends with ctx, which outlives the recorder.
	_ = context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.changed.Broadcast()
	})
	for i := range s.Workloads {
		p := &s.Workloads[i]
		r.records[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = &record{planned: p}
	}
	return r
}

// begin sets the run's start: every time is measured from it.
func (r *recorder) begin(t time.Time) { r.start = t }

// created records that the create request of p is about to be sent.
func (r *recorder) created(p *scenario.Planned, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}].created = at.Sub(r.start)
}

// done is closed when every workload has finished.
func (r *recorder) done() <-chan struct{} { return r.allFinished }

// handler is the informer event handler that feeds the recorder.
func (r *recorder) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.observe(obj) },
		UpdateFunc: func(old, obj any) {
			if relisted(old, obj) {
				r.watchRestarted(errors.New("an update of a Workload came without a new version"))
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

func (r *recorder) observe(obj any) {
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
	r.trail.Record(wl, rec.planned.RequestMilli, now)
	r.changed.Broadcast()
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

// awaitFinishesSeen waits, for at most d, until the watch has shown every
// finished workload's Finished version. A finish counts when its write is
// answered, which can come before the watch shows it, and the quota audit
// replays only what the watch showed: a run that ends on its last answers
// would audit without its last versions.
func (r *recorder) awaitFinishesSeen(d time.Duration) {
	expired := false
	timer := time.AfterFunc(d, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		expired = true
		r.changed.Broadcast()
	})
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !expired && r.ctx.Err() == nil && r.finishUnseen() {
		r.changed.Wait()
	}
}

// finishUnseen reports whether a workload finished that the watch has not
// shown finished. Call it locked.
func (r *recorder) finishUnseen() bool {
	for _, rec := range r.records {
		if rec.finished && (rec.latest == nil || !workload.IsFinished(rec.latest)) {
			return true
		}
	}
	return false
}

// watchRestarted records that the watch failed with err and its
// informer lists the Workloads again: the versions written since the last
// one seen may never be shown, so the quota audit stops there.
func (r *recorder) watchRestarted(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trail.Stop(fmt.Sprintf("the runner's watch failed %s after the start and listed again: %v", time.Since(r.start).Round(time.Millisecond), err))
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
	rec.periods = append(rec.periods, period{Start: rec.admittedAt, End: now, Milli: rec.planned.RequestMilli})
}

// finished records that the running workload finished. Call it locked.
func (r *recorder) finished(rec *record, now time.Duration) {
	rec.timer.Stop()
	rec.finished, rec.finishing, rec.finishedAt = true, false, now
	rec.periods = append(rec.periods, period{Start: rec.admittedAt, End: now, Milli: rec.planned.RequestMilli})
	r.remaining--
	if r.remaining == 0 {
		close(r.allFinished)
	}
}

// counts are how many workloads are in each state at one moment.
type counts struct {
	Created int
	// Admitted were admitted at least once.
	Admitted  int
	Running   int
	Finished  int
	Evictions int
}

// count counts the workloads by state now.
func (r *recorder) count() counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n counts
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

// progress are logger key-value pairs counting the workloads per state.
func (r *recorder) progress() []any {
	n := r.count()
	r.mu.Lock()
	defer r.mu.Unlock()
	return []any{"elapsed", time.Since(r.start).Round(time.Millisecond).String(), "created", n.Created, "running", n.Running,
		"finished", n.Finished, "of", len(r.records), "evictions", n.Evictions, "errors", len(r.errs)}
}

// result is what the recorder measured.
type result struct {
	// Wall is from the start to the last finish.
	Wall time.Duration
	// WaitByClass is each finished workload's time from creation to its
	// last admission, by class.
	WaitByClass map[string][]time.Duration
	// FinishOverhang is, for each finished workload, how long after its
	// runtime its finish was written or seen: from when the runner saw it
	// admitted (its last admission) to when it saw it finished, less the
	// runtime.
	FinishOverhang []time.Duration
	Periods        []period
	Admissions     int
	Evictions      int
	// Unfinished workloads were not finished when the run stopped; Wall
	// is then the time until the run stopped.
	Unfinished int
	// Stuck names a few unfinished workloads, for the error message.
	Stuck  []string
	Errors []error
	// Quota is the audit of the quota held at every version observed.
	Quota audit.Report
}

// result returns what was measured so far.
func (r *recorder) result() result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := result{WaitByClass: map[string][]time.Duration{}, Errors: r.errs}
	for _, rec := range r.records {
		res.Periods = append(res.Periods, rec.periods...)
		if rec.admitted && !rec.finished {
			// Still holding quota when the run stopped.
			res.Periods = append(res.Periods, period{Start: rec.admittedAt, End: time.Since(r.start), Milli: rec.planned.RequestMilli})
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
		res.FinishOverhang = append(res.FinishOverhang, max(0, rec.finishedAt-rec.admittedAt-rec.planned.Runtime))
	}
	if res.Unfinished > 0 {
		res.Wall = time.Since(r.start)
	}
	res.Quota = r.trail.Audit(r.scenario)
	return res
}
