// Package perf runs the scheduler benchmark's harness end to end at a
// small scale: a real API server and etcd, the controller binary as its
// own process, workloads created, admitted, finished and measured.
package perf

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/pprof/profile"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
	"github.com/berth-dev/berth/test/performance/scheduler/runner"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
	"github.com/berth-dev/berth/test/util/apiserver"
)

func TestBaselineAtSmallScale(t *testing.T) {
	dir, berth := t.TempDir(), buildController(t)
	cfg, err := scenario.LoadConfig(filepath.Join(apiserver.RepoRoot(), "test/performance/scheduler/configs/baseline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := testContext(t)
	defer cancel()
	sum, err := runner.Run(ctx, runner.Options{
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
	// Every workload was created, admitted and finished: 3 writes each at
	// least, all of which the API server counted.
	if a := sum.APIServer; a.WorkloadWrites < 3*int64(sum.Workloads) || a.CPUMsPerWorkloadWrite <= 0 || sum.CPUBoundMs <= 0 || sum.FloorRatio <= 0 || sum.Cores <= 0 {
		t.Errorf("the API server's cost per Workload write was not measured: %+v; cpuBoundMs %d, floorRatio %v, cores %d", a, sum.CPUBoundMs, sum.FloorRatio, sum.Cores)
	}
	expectNoQuotaExceeded(t, sum)
	expectProfiles(t, filepath.Join(dir, "out"), time.Duration(sum.WallMs)*time.Millisecond)
}

// restartScenario lasts long enough for a restart mid-run: one cohort of
// two ClusterQueues with 4 cpu each, where smalls arrive for 36 s and
// larges, which preempt them, every 5 s. The restart comes at 30 s, and
// the new leader has the rest done before a second one at 60 s.
const restartScenario = `
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: cq
    count: 2
    nominalQuota: 4
    borrowingLimit: 4
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
    workloadsSets:
    - count: 72
      creationIntervalMs: 500
      workloads:
      - {className: small, runtimeMs: 500, priority: 50, request: 1}
    - count: 7
      creationIntervalMs: 5000
      workloads:
      - {className: large, runtimeMs: 2000, priority: 200, request: 4}
`

// TestRestartedControllerLosesNothing kills the controller with SIGKILL
// during a run, twice: once from outside, 5 s after it first leads, as the
// loss of its node would, which the run must notice and start it again
// for; and once by the run itself at 30 s. Each successor waits for the
// lease, and every workload still finishes, never beyond quota.
func TestRestartedControllerLosesNothing(t *testing.T) {
	cfg, err := scenario.ParseConfig([]byte(restartScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := testContext(t)
	defer cancel()
	berth, out := buildController(t), t.TempDir()
	killed := make(chan error, 1)
	go func() { killed <- killOnceLeading(ctx, berth, filepath.Join(out, "controller.log"), 5*time.Second) }()
	sum, err := runner.Run(ctx, runner.Options{
		Name: "restart", Config: cfg, Scale: 1, Berth: berth, OutDir: out,
		CalibrationWorkers: 8, CalibrationDuration: time.Second, Creators: 16, Timeout: 2 * time.Minute,
		RestartEvery: runner.MinRestartEvery,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-killed; err != nil {
		t.Fatalf("killing the controller from outside: %v", err)
	}
	if sum.Controller.Restarts == 0 || sum.Controller.Exits != 1 || sum.Unfinished != 0 {
		t.Errorf("%d restarts, %d exits, %d of %d workloads unfinished: want a restart, the one exit and every workload finished",
			sum.Controller.Restarts, sum.Controller.Exits, sum.Unfinished, sum.Workloads)
	}
	if sum.Controller.Admissions == 0 || sum.Controller.Writes < sum.Controller.Admissions {
		t.Errorf("the controller's figures %+v do not add up its processes", sum.Controller)
	}
	expectNoQuotaExceeded(t, sum)
}

// expectNoQuotaExceeded checks the run's quota audit: every workload's
// create, admission and finish replayed, none beyond quota.
func expectNoQuotaExceeded(t *testing.T, sum *runner.Summary) {
	t.Helper()
	q := sum.Quota
	if q.Versions < 3*sum.Workloads || q.Violations != 0 || q.Incomplete != "" || q.PeakCohortPercent <= 0 || q.PeakCohortPercent > 100 {
		t.Errorf("quota audit %+v, want at least %d versions replayed, complete, without violation", q, 3*sum.Workloads)
	}
}

func buildController(t *testing.T) string {
	t.Helper()
	berth := filepath.Join(t.TempDir(), "berth")
	build := exec.Command("go", "build", "-o", berth, "./cmd/berth")
	build.Dir = apiserver.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the controller: %v\n%s", err, out)
	}
	return berth
}

// killOnceLeading kills the process running binary with SIGKILL once the
// duration after has passed since log first said it leads.
func killOnceLeading(ctx context.Context, binary, log string, after time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(log)
		return err == nil && bytes.Contains(data, []byte("Successfully acquired lease")), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the controller to lead: %w", err)
	}
	time.Sleep(after)
	pids, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, p := range pids {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe")); err == nil && exe == binary {
			return syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return fmt.Errorf("no process runs %s", binary)
}

func testContext(t *testing.T) (context.Context, context.CancelFunc) {
	log := testr.New(t)
	ctrl.SetLogger(log)
	return context.WithTimeout(ctrl.LoggerInto(context.Background(), log), 4*time.Minute)
}

// expectProfiles checks the profiles in dir: of the controller and of the
// API server, a CPU profile that covers the scenario's wall time and has
// samples in the process's own code, and a heap profile.
func expectProfiles(t *testing.T, dir string, wall time.Duration) {
	t.Helper()
	for process, code := range map[string]string{
		measure.ControllerProfile: "github.com/berth-dev/berth/pkg/",
		measure.APIServerProfile:  "k8s.io/apiserver/",
	} {
		cpu := parseProfile(t, filepath.Join(dir, measure.CPUProfileFile(process)))
		if d := time.Duration(cpu.DurationNanos); d < wall {
			t.Errorf("the CPU profile of the %s covers %s of the scenario's %s", process, d, wall)
		}
		if !measure.Sampled(cpu, func(f string) bool { return strings.HasPrefix(f, code) }) {
			t.Errorf("none of the %d samples of the %s's CPU profile is in %s", len(cpu.Sample), process, code)
		}
		if heap := parseProfile(t, filepath.Join(dir, measure.HeapProfileFile(process))); len(heap.Sample) == 0 {
			t.Errorf("the heap profile of the %s has no samples", process)
		}
	}
}

func parseProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	p, err := measure.ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
