package audit

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

// Report is what the quota audit found: whether any admission went beyond
// quota, over every version of every Workload the runner's watch showed. A
// Workload holds its request from the version that sets its admission
// until the one that clears it or marks it Finished. Replayed in the order
// the API server stored them (by resourceVersion), the versions give the
// quota held after each write, which must never exceed a ClusterQueue's
// nominal quota plus its borrowing limit, nor a cohort's capacity (the sum
// of its ClusterQueues' nominal quotas). A write that leaves more held
// than that is a violation: Berth admitted beyond quota, or admitted
// before the quota it counted on was released.
type Report struct {
	// Versions is how many Workload versions were replayed.
	Versions int `json:"versions"`
	// Violations counts the versions after which some quota was exceeded.
	Violations int `json:"violations"`
	// FirstViolation describes the first of them.
	FirstViolation string `json:"firstViolation,omitempty"`
	// PeakCohortPercent is the most any cohort held, as a percentage of
	// its capacity: 100 when a cohort was full at some moment.
	PeakCohortPercent float64 `json:"peakCohortPercent"`
	// Incomplete, when set, says why the audit stopped before the run's
	// end: the watch had to list again and may have skipped versions, so
	// only the versions before that were replayed.
	Incomplete string `json:"incomplete,omitempty"`
}

// Trail is what the audit replays: the Workload versions the watch showed,
// until Stop says why no more can be trusted. It is not safe for
// concurrent use; its owner locks it.
type Trail struct {
	versions []version
	stopped  string
}

// Record keeps the version wl, seen at at since the run's start, of a
// workload requesting milli cpu; after Stop it keeps nothing.
func (t *Trail) Record(wl *berthv1alpha1.Workload, milli int64, at time.Duration) {
	if t.stopped != "" {
		return
	}
	if v, ok := holding(wl, milli, at); ok {
		t.versions = append(t.versions, v)
	}
}

// Stop ends the trail, why being the reason the audit reports. A trail
// that holds no version yet skipped none, and goes on; a stopped one
// keeps its first reason.
func (t *Trail) Stop(why string) {
	if t.stopped == "" && len(t.versions) > 0 {
		t.stopped = why
	}
}

// Audit replays the trail against s's quotas.
func (t *Trail) Audit(s *scenario.Scenario) Report {
	r := auditQuota(s, t.versions)
	r.Incomplete = t.stopped
	return r
}

// version is what one observed Workload version holds.
type version struct {
	rv  uint64
	key types.NamespacedName
	// clusterQueue is where the version holds quota, "" if nowhere.
	clusterQueue string
	milli        int64
	at           time.Duration
}

// holding returns the version of wl observed at, with request milli; ok
// is false when wl has no resourceVersion the audit can order.
func holding(wl *berthv1alpha1.Workload, milli int64, at time.Duration) (version, bool) {
	rv, err := strconv.ParseUint(wl.ResourceVersion, 10, 64)
	if err != nil {
		return version{}, false
	}
	v := version{rv: rv, key: types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}, milli: milli, at: at}
	if wl.Status.Admission != nil && !workload.IsFinished(wl) {
		v.clusterQueue = string(wl.Status.Admission.ClusterQueue)
	}
	return v, true
}

// auditQuota replays versions, in any order, against s's quotas.
func auditQuota(s *scenario.Scenario, versions []version) Report {
	l := newLedger(s)
	var r Report
	for _, v := range inStoreOrder(versions) {
		prev, seen := l.latest[v.key]
		if seen && prev.rv == v.rv {
			// The same version shown again, by a list.
			continue
		}
		r.Versions++
		l.replace(prev, v)
		if v.clusterQueue == "" || (seen && prev.clusterQueue == v.clusterQueue) {
			// Not an admission: nothing held more than before.
			continue
		}
		r.PeakCohortPercent = max(r.PeakCohortPercent, l.cohortPercent(v.clusterQueue))
		if problem := l.exceeded(v.clusterQueue); problem != "" {
			r.violation(v, problem)
		}
	}
	return r
}

// inStoreOrder is versions in the order the API server stored them; the
// key only makes the order of equal versions, which a list may repeat,
// stable.
func inStoreOrder(versions []version) []version {
	versions = slices.Clone(versions)
	slices.SortFunc(versions, func(a, b version) int {
		return cmp.Or(cmp.Compare(a.rv, b.rv), cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	return versions
}

// violation counts one, and describes it if it is the first.
func (r *Report) violation(v version, problem string) {
	r.Violations++
	if r.FirstViolation == "" {
		r.FirstViolation = fmt.Sprintf("after %s was admitted to %s (resourceVersion %d, seen at %s), %s",
			v.key, v.clusterQueue, v.rv, v.at.Round(time.Millisecond), problem)
	}
}

// ledger is the quota held after each version replayed so far.
type ledger struct {
	// clusterQueueLimit and cohortCapacity are the most each ClusterQueue
	// and cohort may hold; cohortOf maps a ClusterQueue to its cohort.
	clusterQueueLimit, cohortCapacity map[string]int64
	cohortOf                          map[string]string
	// latest is each workload's latest version.
	latest                       map[types.NamespacedName]version
	clusterQueueHeld, cohortHeld map[string]int64
}

func newLedger(s *scenario.Scenario) *ledger {
	l := &ledger{
		clusterQueueLimit: map[string]int64{}, cohortCapacity: map[string]int64{}, cohortOf: map[string]string{},
		latest: map[types.NamespacedName]version{}, clusterQueueHeld: map[string]int64{}, cohortHeld: map[string]int64{},
	}
	for _, co := range s.Cohorts {
		l.cohortCapacity[co.Name] = co.CapacityMilli
	}
	for _, q := range s.Queues {
		l.cohortOf[q.Name] = q.Cohort
		limit := int64(math.MaxInt64)
		if q.Set.BorrowingLimit != nil {
			limit = q.Set.NominalQuota.MilliValue() + q.Set.BorrowingLimit.MilliValue()
		}
		l.clusterQueueLimit[q.Name] = limit
	}
	return l
}

// replace makes v its workload's latest version, in place of prev (the
// zero version if v is the first).
func (l *ledger) replace(prev, v version) {
	l.hold(prev, -1)
	l.hold(v, 1)
	l.latest[v.key] = v
}

// hold adds (sign 1) or removes (sign -1) what v holds.
func (l *ledger) hold(v version, sign int64) {
	if v.clusterQueue == "" {
		return
	}
	l.clusterQueueHeld[v.clusterQueue] += sign * v.milli
	if co, ok := l.cohortOf[v.clusterQueue]; ok {
		l.cohortHeld[co] += sign * v.milli
	}
}

// exceeded says how the quota of clusterQueue or of its cohort is
// exceeded now, or returns "" when it is not.
func (l *ledger) exceeded(clusterQueue string) string {
	limit, ok := l.clusterQueueLimit[clusterQueue]
	if !ok {
		return fmt.Sprintf("ClusterQueue %s is not one of the scenario's", clusterQueue)
	}
	if held := l.clusterQueueHeld[clusterQueue]; held > limit {
		return fmt.Sprintf("ClusterQueue %s held %dm cpu, above its nominal quota plus borrowing limit of %dm", clusterQueue, held, limit)
	}
	co := l.cohortOf[clusterQueue]
	if capacity, held := l.cohortCapacity[co], l.cohortHeld[co]; held > capacity {
		return fmt.Sprintf("cohort %s held %dm cpu, above its capacity of %dm", co, held, capacity)
	}
	return ""
}

// cohortPercent is what the cohort of clusterQueue holds now, as a
// percentage of its capacity; 0 when it has none.
func (l *ledger) cohortPercent(clusterQueue string) float64 {
	co, ok := l.cohortOf[clusterQueue]
	capacity := l.cohortCapacity[co]
	if !ok || capacity <= 0 {
		return 0
	}
	// Two decimals, as every figure of the summary.
	return math.Round(100*(100*float64(l.cohortHeld[co])/float64(capacity))) / 100
}
