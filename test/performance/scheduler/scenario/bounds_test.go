package scenario

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBound(t *testing.T) {
	ms := time.Millisecond
	cases := map[string]struct {
		config string
		s      *Scenario
		want   time.Duration
	}{
		// Per cohort: 6 queues x (350x1x200 + 100x5x500 + 50x20x1000)
		// cpu x ms = 7,920,000 over 120 cpu; the last large is created
		// at 58.8 s and runs 1 s.
		"baseline: the cohort's work over its capacity, 66 s": {config: "baseline", want: 66000 * ms},
		// Per cohort: 100 x (35x1x150 + 11x5x350 + 4x20x700) = 8,050,000
		// over 2,000 cpu; the last medium ends at 3 s + 350 ms.
		"large: the last medium's end, 3.35 s, beats the work's 4.025 s": {config: "large", want: 4025 * ms},
		"the last creation plus its runtime when capacity is ample": {
			s: &Scenario{
				Cohorts:   []Cohort{{Name: "a", CapacityMilli: 100000}},
				Workloads: []Planned{{Cohort: "a", Offset: 0, Runtime: 10 * ms, RequestMilli: 1000}, {Cohort: "a", Offset: 900 * ms, Runtime: 200 * ms, RequestMilli: 1000}},
			},
			want: 1100 * ms,
		},
		"the slowest cohort": {
			s: &Scenario{
				Cohorts: []Cohort{{Name: "a", CapacityMilli: 1000}, {Name: "b", CapacityMilli: 1000}},
				Workloads: []Planned{
					{Cohort: "a", Runtime: 100 * ms, RequestMilli: 1000},
					{Cohort: "b", Runtime: 100 * ms, RequestMilli: 1000}, {Cohort: "b", Runtime: 100 * ms, RequestMilli: 1000},
				},
			},
			want: 200 * ms,
		},
		"no workloads": {s: &Scenario{Cohorts: []Cohort{{Name: "a", CapacityMilli: 1000}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := tc.s
			if tc.config != "" {
				cfg, err := LoadConfig(filepath.Join("..", "configs", tc.config+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				if s, err = Generate(cfg, 1); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, Bound(s)); diff != "" {
				t.Errorf("Bound() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAPIBound(t *testing.T) {
	cases := map[string]struct {
		n    int
		wps  float64
		want time.Duration
	}{
		"three writes per workload": {n: 15000, wps: 2000, want: 22500 * time.Millisecond},
		"no calibration":            {n: 15000, wps: 0, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, APIBound(tc.n, tc.wps)); diff != "" {
				t.Errorf("APIBound() (-want +got):\n%s", diff)
			}
		})
	}
}
