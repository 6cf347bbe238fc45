package runner

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// finish marks the workload finished, if it still runs its admission-th
// admission, as Berth's job integrations do (workload.Finish): a write of
// its status bound to the version last observed. When the API server has
// a newer version it waits for the watch to bring it: the workload was
// evicted, most likely, and then the eviction ends the finish.
func (r *recorder) finish(key types.NamespacedName, rec *record, admission int) {
	if !r.claimFinish(rec, admission) {
		return
	}
	due, err := r.writeFinished(rec, admission)
	if !due {
		return
	}
	r.endFinish(key, rec, admission, err, time.Since(r.start))
}

// finishDue reports whether the finish of the admission-th admission is
// under way and still due: the workload has been neither evicted nor
// finished since it was claimed.
func (rec *record) finishDue(admission int) bool {
	return rec.finishing && rec.admission == admission
}

// claimFinish marks the finish of rec's admission-th admission under way,
// unless that admission has ended or its finish already is.
func (r *recorder) claimFinish(rec *record, admission int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !rec.admitted || rec.finishing || rec.admission != admission {
		return false
	}
	rec.finishing = true
	return true
}

// writeFinished writes the Finished condition from the latest version
// observed: after a conflict, from the newer version the watch brings;
// after another failure, again, up to 5 failures. due is false when the
// finish stopped being due before a write succeeded.
func (r *recorder) writeFinished(rec *record, admission int) (due bool, err error) {
	stale := ""
	for failures := 0; failures < 5 && r.ctx.Err() == nil; {
		wl := r.versionToFinish(rec, admission, stale)
		if wl == nil {
			return false, nil
		}
		err = r.slots.do(r.ctx, func() error {
			_, err := workloadwriter.Apply(r.ctx, r.writer, wl, workload.Finish("Succeeded", "The benchmark's job ran its runtime"))
			return err
		})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsConflict(err):
			stale = wl.ResourceVersion
		default:
			stale = ""
			failures++
			time.Sleep(100 * time.Millisecond)
		}
	}
	return true, err
}

// versionToFinish returns the version to write the Finished condition
// from: the latest observed, once it differs from stale, the version a
// write conflicted on ("" when none did). It returns nil when the finish
// is no longer due: the watch brought an eviction, the version it returns
// would have shown one, or the run ended while it waited.
func (r *recorder) versionToFinish(rec *record, admission int, stale string) *berthv1alpha1.Workload {
	r.mu.Lock()
	defer r.mu.Unlock()
	for rec.finishDue(admission) && rec.latest.ResourceVersion == stale {
		// Checked with mu held: ctx's end broadcasts with it held, so it
		// cannot come between this check and the wait.
		if r.ctx.Err() != nil {
			return nil
		}
		r.changed.Wait()
	}
	if !rec.finishDue(admission) {
		return nil
	}
	if !runs(rec.latest) {
		rec.evicted(time.Since(r.start))
		return nil
	}
	return rec.latest
}

// endFinish records how the finish ended, err or, if none, the end of the
// run, unless it stopped being due meanwhile: the watch showed the
// workload finished or evicted.
func (r *recorder) endFinish(key types.NamespacedName, rec *record, admission int, err error, now time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.finished || !rec.finishDue(admission) {
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

// slots bounds how many Finished writes are under way at once, as a job
// integration's workers would (Kueue's runner finishes workloads from a
// single reconciler). Without a bound, a run with thousands of workloads
// running at once sends the API server thousands of writes together when
// it is slowest to answer them. Nil slots do not bound them.
type slots chan struct{}

// newSlots bounds the writes to n at once; 0 does not bound them.
func newSlots(n int) slots {
	if n <= 0 {
		return nil
	}
	return make(slots, n)
}

// do makes write in a slot, once one is free; it gives up waiting when
// ctx ends.
func (s slots) do(ctx context.Context, write func() error) error {
	if s == nil {
		return write()
	}
	select {
	case s <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s }()
	return write()
}
