// Package perf runs the scheduler benchmark's harness end to end at a
// small scale: a real API server and etcd, the controller binary as its
// own process, workloads created, admitted, finished and measured.
package perf

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
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
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Workloads != 300 || sum.Unfinished != 0 || sum.Admissions < sum.Workloads {
		t.Errorf("workloads %d, unfinished %d, admissions %d: want all 300 admitted and finished", sum.Workloads, sum.Unfinished, sum.Admissions)
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
}
