package runner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

func TestPercentile(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	cases := map[string]struct {
		sorted []float64
		p      float64
		want   float64
	}{
		"median of ten is the fifth":  {sorted: ten, p: 50, want: 5},
		"p95 of ten is the tenth":     {sorted: ten, p: 95, want: 10},
		"p0 is the smallest":          {sorted: ten, p: 0, want: 1},
		"p100 is the largest":         {sorted: ten, p: 100, want: 10},
		"one value is every quantile": {sorted: []float64{7}, p: 95, want: 7},
		"none":                        {sorted: nil, p: 50, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, percentile(tc.sorted, tc.p)); diff != "" {
				t.Errorf("percentile() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewStats(t *testing.T) {
	ms := time.Millisecond
	cases := map[string]struct {
		in   []time.Duration
		want Stats
	}{
		"unsorted input":  {in: []time.Duration{30 * ms, 10 * ms, 20 * ms, 40 * ms}, want: Stats{Count: 4, AvgMs: 25, P50Ms: 20, P95Ms: 40, MaxMs: 40}},
		"sub-millisecond": {in: []time.Duration{1500 * time.Microsecond}, want: Stats{Count: 1, AvgMs: 1.5, P50Ms: 1.5, P95Ms: 1.5, MaxMs: 1.5}},
		"none":            {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, newStats(tc.in)); diff != "" {
				t.Errorf("newStats() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsagePercent(t *testing.T) {
	s := time.Second
	cases := map[string]struct {
		periods []period
		window  time.Duration
		nominal int64
		want    float64
	}{
		"full quota all the time": {periods: []period{{0, 10 * s, 4000}}, window: 10 * s, nominal: 4000, want: 100},
		"half the quota half the time": {
			periods: []period{{0, 5 * s, 2000}}, window: 10 * s, nominal: 4000, want: 25,
		},
		"overlapping periods add up": {
			periods: []period{{0, 10 * s, 1000}, {2 * s, 4 * s, 3000}}, window: 10 * s, nominal: 4000, want: 40,
		},
		"parts outside the window do not count": {
			periods: []period{{-2 * s, 2 * s, 4000}, {8 * s, 12 * s, 4000}}, window: 10 * s, nominal: 4000, want: 40,
		},
		"borrowing shows above 100": {periods: []period{{0, 10 * s, 6000}}, window: 10 * s, nominal: 4000, want: 150},
		"an empty window":           {periods: []period{{0, 10 * s, 6000}}, nominal: 4000},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, usagePercent(tc.periods, tc.window, tc.nominal)); diff != "" {
				t.Errorf("usagePercent() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummarizeRatios: ratio is against the ConfigMap bound, as the issue
// defines it; workloadRatio against the tighter Workload one.
func TestSummarizeRatios(t *testing.T) {
	ms := time.Millisecond
	s := &scenario.Scenario{
		Cohorts: []scenario.Cohort{{Name: "a", CapacityMilli: 100000}},
		// Scenario bound: 1 s.
		Workloads: []scenario.Planned{{Cohort: "a", Runtime: time.Second, RequestMilli: 1000}, {Cohort: "a", Runtime: time.Second, RequestMilli: 1000}},
	}
	// 6 writes at 3 a second: 2 s; at 1.5 a second: 4 s.
	cal := measure.Calibration{WritesPerSecond: 3, WorkloadWritesPerSecond: 1.5}
	got := summarize(Options{Name: "t", Scale: 1}, s, result{Wall: 8000 * ms}, cal)
	if got.LowerBoundMs != 2000 || got.Ratio != 4 {
		t.Errorf("lowerBoundMs, ratio = %d, %v; want 2000, 4", got.LowerBoundMs, got.Ratio)
	}
	if got.WorkloadAPIBoundMs != 4000 || got.WorkloadRatio != 2 {
		t.Errorf("workloadApiBoundMs, workloadRatio = %d, %v; want 4000, 2", got.WorkloadAPIBoundMs, got.WorkloadRatio)
	}
	// No run on this machine can take less than the Workload bound's 4 s.
	if got.FloorRatio != 2 {
		t.Errorf("floorRatio = %v; want 2", got.FloorRatio)
	}
}

// TestAddAPIServerCost: the CPU per Workload write and the time the
// writes any system must make take at that cost on all the cores.
func TestAddAPIServerCost(t *testing.T) {
	s := &Summary{Workloads: 1000}
	// 6 CPU-seconds for 2,000 writes: 3 ms each; 3,000 writes at 3 ms on
	// 2 cores take 4.5 s.
	s.addAPIServerCost(2000, 6, 2)
	if s.APIServer.WorkloadWrites != 2000 || s.APIServer.CPUMsPerWorkloadWrite != 3 || s.CPUBoundMs != 4500 || s.Cores != 2 {
		t.Errorf("workloadWrites, cpuMsPerWorkloadWrite, cpuBoundMs, cores = %d, %v, %d, %d; want 2000, 3, 4500, 2",
			s.APIServer.WorkloadWrites, s.APIServer.CPUMsPerWorkloadWrite, s.CPUBoundMs, s.Cores)
	}
	none := &Summary{Workloads: 1000}
	none.addAPIServerCost(0, 6, 2)
	if none.CPUBoundMs != 0 || none.APIServer.CPUMsPerWorkloadWrite != 0 {
		t.Errorf("with no writes: cpuBoundMs, cpuMsPerWorkloadWrite = %d, %v; want 0, 0", none.CPUBoundMs, none.APIServer.CPUMsPerWorkloadWrite)
	}
}
