package runner

import (
	"fmt"
	"slices"
	"strings"
)

// Target is one figure a run should reach.
type Target struct {
	Name  string
	Max   bool // the figure must be at most Limit, else at least
	Limit float64
	Get   func(*Summary) (float64, bool)
	// Reach, when set, says why no run on the summary's machine can meet
	// Limit, or returns "" when one might.
	Reach func(s *Summary, limit float64) string
}

// baselineTargets are the baseline's goals from issue 6, with issue 47's
// writes per admission.
var baselineTargets = []Target{
	{Name: "ratio", Max: true, Limit: 1.25, Get: ratioOf, Reach: ratioReach},
	{Name: "classes.large.avgMs", Max: true, Limit: 5000, Get: func(s *Summary) (float64, bool) {
		c, ok := s.Classes["large"]
		return c.AvgMs, ok
	}},
	{Name: "usagePercent", Limit: 80, Get: func(s *Summary) (float64, bool) { return s.UsagePercent, true }},
	{Name: "controller.writesPerAdmission", Max: true, Limit: 1.5, Get: func(s *Summary) (float64, bool) { return s.Controller.WritesPerAdmission, true }},
	{Name: "controller.cpuSeconds", Max: true, Limit: 15, Get: func(s *Summary) (float64, bool) { return s.Controller.CPUSeconds, true }},
}

// largeTargets are the large scenario's goals from issue 6: it completes
// (Check requires every workload finished) within 1.5 of its lower bound.
var largeTargets = []Target{
	{Name: "ratio", Max: true, Limit: 1.5, Get: ratioOf, Reach: ratioReach},
}

// TargetsFor returns the targets of the scenario a summary names.
func TargetsFor(config string) ([]Target, error) {
	switch config {
	case "baseline":
		return baselineTargets, nil
	case "large":
		return largeTargets, nil
	}
	return nil, fmt.Errorf("no targets for the scenario %q: only baseline and large have them", config)
}

func ratioOf(s *Summary) (float64, bool) { return s.Ratio, true }

// ratioReach says why a ratio of at most limit is beyond the machine the
// run had: its API server's rate of Workload writes, measured alone, or
// the CPU the run's API server and etcd spent per Workload write.
func ratioReach(s *Summary, limit float64) string {
	var why []string
	if s.FloorRatio > limit {
		why = append(why, fmt.Sprintf("its API server stores %v Workload writes a second when nothing else runs, so the writes any system must make take %v s: no ratio below %v",
			s.WorkloadWritesPerSecond, seconds(s.WorkloadAPIBoundMs), s.FloorRatio))
	}
	if allowed := limit * float64(s.LowerBoundMs); s.CPUBoundMs > 0 && float64(s.CPUBoundMs) > allowed {
		why = append(why, fmt.Sprintf("at the %v ms of API server and etcd CPU this run spent per Workload write, those writes take %v s of its %d cores, more than the %v s the target allows",
			s.APIServer.CPUMsPerWorkloadWrite, seconds(s.CPUBoundMs), s.Cores, round(allowed/1000)))
	}
	return strings.Join(why, "; ")
}

func seconds(ms int64) float64 { return round(float64(ms) / 1000) }

// Check returns a sentence per target that s misses; a miss that no run on
// the summary's machine could avoid says why.
func Check(s *Summary, targets []Target) []string {
	var misses []string
	for _, t := range targets {
		v, ok := t.Get(s)
		var miss string
		switch {
		case !ok:
			miss = fmt.Sprintf("%s: missing from the summary", t.Name)
		case t.Max && v > t.Limit:
			miss = fmt.Sprintf("%s is %v, above the target of at most %v", t.Name, v, t.Limit)
		case !t.Max && v < t.Limit:
			miss = fmt.Sprintf("%s is %v, below the target of at least %v", t.Name, v, t.Limit)
		default:
			continue
		}
		if t.Reach != nil && ok {
			if why := t.Reach(s, t.Limit); why != "" {
				miss += " (out of this machine's reach: " + why + ")"
			}
		}
		misses = append(misses, miss)
	}
	if q := s.Quota; q.Violations > 0 {
		misses = append(misses, fmt.Sprintf("quota.violations is %d: Workloads held more than their quota (the first: %s)", q.Violations, q.FirstViolation))
	}
	if s.Unfinished > 0 {
		misses = append(misses, fmt.Sprintf("%d workloads did not finish: the run was cut short", s.Unfinished))
	}
	if s.Controller.Exits > 0 {
		misses = append(misses, fmt.Sprintf("controller.exits is %d: the controller exited during the run and was started again (its log says why)", s.Controller.Exits))
	}
	if s.Scale != 1 {
		misses = append(misses, fmt.Sprintf("scale is %v: the targets are for the full scenario (scale 1)", s.Scale))
	}
	return slices.Clip(misses)
}
