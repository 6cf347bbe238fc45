package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
)

func TestCheck(t *testing.T) {
	good := func() *Summary {
		return &Summary{
			Scale: 1, Ratio: 1.1, UsagePercent: 85, Classes: map[string]Stats{"large": {AvgMs: 3000}},
			Controller: Controller{Process: measure.Process{CPUSeconds: 10}, WritesPerAdmission: 1.4},
		}
	}
	cases := map[string]struct {
		edit func(*Summary)
		want []string
	}{
		"every target met": {edit: func(*Summary) {}},
		"slow and wasteful": {
			edit: func(s *Summary) { s.Ratio, s.UsagePercent, s.Controller.WritesPerAdmission = 1.5, 60, 3 },
			want: []string{
				"ratio is 1.5, above the target of at most 1.25",
				"usagePercent is 60, below the target of at least 80",
				"controller.writesPerAdmission is 3, above the target of at most 1.5",
			},
		},
		"a ratio out of the machine's reach": {
			edit: func(s *Summary) {
				s.Ratio, s.LowerBoundMs, s.Cores = 2, 66000, 2
				s.WorkloadWritesPerSecond, s.WorkloadAPIBoundMs, s.FloorRatio = 300, 150000, 2.27
				s.APIServer.CPUMsPerWorkloadWrite, s.CPUBoundMs = 4, 90000
			},
			want: []string{
				"ratio is 2, above the target of at most 1.25 (out of this machine's reach: " +
					"its API server stores 300 Workload writes a second when nothing else runs, so the writes any system must make take 150 s: no ratio below 2.27; " +
					"at the 4 ms of API server and etcd CPU this run spent per Workload write, those writes take 90 s of its 2 cores, more than the 82.5 s the target allows)",
			},
		},
		"a ratio the machine allows": {
			edit: func(s *Summary) { s.Ratio, s.LowerBoundMs, s.FloorRatio, s.CPUBoundMs = 1.3, 66000, 1.1, 80000 },
			want: []string{"ratio is 1.3, above the target of at most 1.25"},
		},
		"a controller that exited": {
			edit: func(s *Summary) { s.Controller.Exits = 1 },
			want: []string{"controller.exits is 1: the controller exited during the run and was started again (its log says why)"},
		},
		"no large class and a scaled run": {
			edit: func(s *Summary) { s.Classes, s.Scale = nil, 0.1 },
			want: []string{
				"classes.large.avgMs: missing from the summary",
				"scale is 0.1: the targets are for the full scenario (scale 1)",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := good()
			tc.edit(s)
			if diff := cmp.Diff(tc.want, Check(s, baselineTargets)); diff != "" {
				t.Errorf("Check() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTargetsFor(t *testing.T) {
	for config, want := range map[string]float64{"baseline": 1.25, "large": 1.5} {
		targets, err := TargetsFor(config)
		if err != nil || targets[0].Name != "ratio" || targets[0].Limit != want {
			t.Errorf("TargetsFor(%q): first target %+v, %v; want ratio at most %v", config, targets[0], err, want)
		}
	}
	if _, err := TargetsFor("mine"); err == nil {
		t.Error("TargetsFor(\"mine\"): no error; want one: it has no targets")
	}
}
