// Package perf runs the scheduler benchmark's harness end to end at a
// small scale: a real API server and etcd, the controller binary as its
// own process, workloads created, admitted, finished and measured.
package perf

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/pprof/profile"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berth-dev/berth/test/performance/scheduler"
	"github.com/berth-dev/berth/test/util/apiserver"
)

func TestBaselineAtSmallScale(t *testing.T) {
	root := apiserver.RepoRoot()
	dir := t.TempDir()
	berth := filepath.Join(dir, "berth")
	build := exec.Command("go", "build", "-o", berth, "./cmd/berth")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the controller: %v\n%s", err, out)
	}
	cfg, err := scheduler.LoadConfig(filepath.Join(root, "test/performance/scheduler/configs/baseline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	log := testr.New(t)
	ctrl.SetLogger(log)
	ctx, cancel := context.WithTimeout(ctrl.LoggerInto(context.Background(), log), 4*time.Minute)
	defer cancel()
	sum, err := scheduler.Run(ctx, scheduler.Options{
		Name: "baseline", Config: cfg, Scale: 0.02, Berth: berth, OutDir: filepath.Join(dir, "out"),
		CalibrationWorkers: 8, CalibrationDuration: time.Second, Creators: 16, Timeout: 2 * time.Minute,
		Profile: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Workloads != 300 || sum.Unfinished != 0 || sum.Admissions < sum.Workloads {
		t.Errorf("workloads %d, unfinished %d, admissions %d: want all 300 admitted and finished", sum.Workloads, sum.Unfinished, sum.Admissions)
	}
	var preemptions int64
	for _, n := range sum.Controller.PreemptionsByReason {
		preemptions += n
	}
	if sum.Controller.Admissions != int64(sum.Admissions) || preemptions != int64(sum.Evictions) {
		t.Errorf("the controller wrote %d admissions and %d preemptions; the runner counted %d and %d evictions",
			sum.Controller.Admissions, preemptions, sum.Admissions, sum.Evictions)
	}
	for _, class := range []string{"small", "medium", "large"} {
		if c := sum.Classes[class]; c.Count == 0 || c.MaxMs < c.AvgMs {
			t.Errorf("class %s: %+v, want its workloads measured", class, c)
		}
	}
	if sum.APIWritesPerSecond <= 0 || sum.WorkloadWritesPerSecond <= 0 || sum.LowerBoundMs <= 0 || sum.Ratio <= 0 {
		t.Errorf("calibration and bounds missing: %+v", sum)
	}
	if sum.Controller.Writes == 0 || sum.Controller.CPUSeconds <= 0 || sum.Controller.WritesPerAdmission <= 0 {
		t.Errorf("the controller's cost was not measured: %+v", sum.Controller)
	}
	expectProfiles(t, filepath.Join(dir, "out"), time.Duration(sum.WallMs)*time.Millisecond)
}

// expectProfiles checks the profiles in dir: of the controller and of the
// API server, a CPU profile that covers the scenario's wall time and has
// samples in the process's own code, and a heap profile.
func expectProfiles(t *testing.T, dir string, wall time.Duration) {
	t.Helper()
	for process, code := range map[string]string{
		scheduler.ControllerProfile: "github.com/berth-dev/berth/pkg/",
		scheduler.APIServerProfile:  "k8s.io/apiserver/",
	} {
		cpu := parseProfile(t, filepath.Join(dir, scheduler.CPUProfileFile(process)))
		if d := time.Duration(cpu.DurationNanos); d < wall {
			t.Errorf("the CPU profile of the %s covers %s of the scenario's %s", process, d, wall)
		}
		if !scheduler.Sampled(cpu, func(f string) bool { return strings.HasPrefix(f, code) }) {
			t.Errorf("none of the %d samples of the %s's CPU profile is in %s", len(cpu.Sample), process, code)
		}
		if heap := parseProfile(t, filepath.Join(dir, scheduler.HeapProfileFile(process))); len(heap.Sample) == 0 {
			t.Errorf("the heap profile of the %s has no samples", process)
		}
	}
}

func parseProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	p, err := scheduler.ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
