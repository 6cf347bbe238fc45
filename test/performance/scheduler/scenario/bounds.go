package scenario

import "time"

// WritesPerWorkload are the API writes any queueing system must make per
// workload: its creation, its admission and its finish.
const WritesPerWorkload = 3

// Bound is the shortest wall time the scenario allows, whatever
// the system and however fast the API: per cohort, the later of the last
// creation plus its runtime (nothing can finish earlier) and the cohort's
// work (request x runtime, summed) over its capacity (its queues' nominal
// quota: borrowing moves capacity between queues of a cohort but adds
// none). The bound is the largest over cohorts.
func Bound(s *Scenario) time.Duration {
	type acc struct {
		last time.Duration
		work float64 // milli-cpu x ms
	}
	per := map[string]*acc{}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		a := per[w.Cohort]
		if a == nil {
			a = &acc{}
			per[w.Cohort] = a
		}
		a.last = max(a.last, w.Offset+w.Runtime)
		a.work += float64(w.RequestMilli) * float64(w.Runtime.Milliseconds())
	}
	var bound time.Duration
	for _, c := range s.Cohorts {
		a := per[c.Name]
		if a == nil || c.CapacityMilli == 0 {
			continue
		}
		work := time.Duration(a.work/float64(c.CapacityMilli)) * time.Millisecond
		bound = max(bound, a.last, work)
	}
	return bound
}

// APIBound is the shortest wall time that the API server's write rate
// allows for n workloads: WritesPerWorkload each at writesPerSecond.
func APIBound(n int, writesPerSecond float64) time.Duration {
	if writesPerSecond <= 0 {
		return 0
	}
	return time.Duration(float64(WritesPerWorkload*n) / writesPerSecond * float64(time.Second))
}
