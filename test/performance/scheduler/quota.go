package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workload"
)

// QuotaAudit is the check that no admission went beyond quota, over every
// version of every Workload the runner's watch showed. A Workload holds
// its request from the version that sets its admission until the one that
// clears it or marks it Finished. Replayed in the order the API server
// stored them (by resourceVersion), the versions give the quota held after
// each write, which must never exceed a ClusterQueue's nominal quota plus
// its borrowing limit, nor a cohort's capacity (the sum of its
// ClusterQueues' nominal quotas). A write that leaves more held than that
// is a violation: Berth admitted beyond quota, or admitted before the
// quota it counted on was released.
type QuotaAudit struct {
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

// quotaVersion is what one observed Workload version holds.
type quotaVersion struct {
	rv  uint64
	key types.NamespacedName
	// clusterQueue is where the version holds quota, "" if nowhere.
	clusterQueue string
	milli        int64
	at           time.Duration
}

// holding returns the version of wl observed at, with request milli; ok
// is false when wl has no resourceVersion the audit can order.
func holding(wl *berthv1alpha1.Workload, milli int64, at time.Duration) (quotaVersion, bool) {
	rv, err := strconv.ParseUint(wl.ResourceVersion, 10, 64)
	if err != nil {
		return quotaVersion{}, false
	}
	v := quotaVersion{rv: rv, key: types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}, milli: milli, at: at}
	if wl.Status.Admission != nil && !workload.IsFinished(wl) {
		v.clusterQueue = string(wl.Status.Admission.ClusterQueue)
	}
	return v, true
}

// quotaLimits are the most each ClusterQueue and cohort may hold.
type quotaLimits struct {
	clusterQueue map[string]int64
	cohortOf     map[string]string
	cohort       map[string]int64
}

func limitsOf(s *Scenario) quotaLimits {
	l := quotaLimits{clusterQueue: map[string]int64{}, cohortOf: map[string]string{}, cohort: map[string]int64{}}
	for _, co := range s.Cohorts {
		l.cohort[co.Name] = co.CapacityMilli
	}
	for _, q := range s.Queues {
		l.cohortOf[q.Name] = q.Cohort
		limit := int64(math.MaxInt64)
		if q.Set.BorrowingLimit != nil {
			limit = q.Set.NominalQuota.MilliValue() + q.Set.BorrowingLimit.MilliValue()
		}
		l.clusterQueue[q.Name] = limit
	}
	return l
}

// AuditQuota replays versions, in any order, against s's quotas.
func AuditQuota(s *Scenario, versions []quotaVersion) QuotaAudit {
	limits := limitsOf(s)
	versions = slices.Clone(versions)
	slices.SortFunc(versions, func(a, b quotaVersion) int {
		return cmp.Or(cmp.Compare(a.rv, b.rv), cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	var audit QuotaAudit
	latest := map[types.NamespacedName]quotaVersion{}
	cqHeld, cohortHeld := map[string]int64{}, map[string]int64{}
	hold := func(v quotaVersion, sign int64) {
		if v.clusterQueue == "" {
			return
		}
		cqHeld[v.clusterQueue] += sign * v.milli
		if co, ok := limits.cohortOf[v.clusterQueue]; ok {
			cohortHeld[co] += sign * v.milli
		}
	}
	for _, v := range versions {
		prev, seen := latest[v.key]
		if seen && prev.rv == v.rv {
			// The same version shown again, by a list.
			continue
		}
		audit.Versions++
		hold(prev, -1)
		hold(v, 1)
		latest[v.key] = v
		if v.clusterQueue == "" || (seen && prev.clusterQueue == v.clusterQueue) {
			continue
		}
		problem := ""
		if limit, ok := limits.clusterQueue[v.clusterQueue]; !ok {
			problem = fmt.Sprintf("ClusterQueue %s is not one of the scenario's", v.clusterQueue)
		} else if held := cqHeld[v.clusterQueue]; held > limit {
			problem = fmt.Sprintf("ClusterQueue %s held %dm cpu, above its nominal quota plus borrowing limit of %dm", v.clusterQueue, held, limit)
		}
		if co, ok := limits.cohortOf[v.clusterQueue]; ok {
			capacity, held := limits.cohort[co], cohortHeld[co]
			if capacity > 0 {
				audit.PeakCohortPercent = max(audit.PeakCohortPercent, round(100*float64(held)/float64(capacity)))
			}
			if held > capacity && problem == "" {
				problem = fmt.Sprintf("cohort %s held %dm cpu, above its capacity of %dm", co, held, capacity)
			}
		}
		if problem == "" {
			continue
		}
		audit.Violations++
		if audit.FirstViolation == "" {
			audit.FirstViolation = fmt.Sprintf("after %s was admitted to %s (resourceVersion %d, seen at %s), %s",
				v.key, v.clusterQueue, v.rv, v.at.Round(time.Millisecond), problem)
		}
	}
	return audit
}
