// Command perf runs Berth's scheduler benchmark (see package
// test/performance/scheduler) and checks a summary against the targets.
// It only wires flags to the runner.
//
//	perf run --config configs/baseline.yaml [--scale 0.1]
//	perf check [--summary _output/perf/baseline/summary.json]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/berth-dev/berth/test/performance/scheduler/runner"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
	"github.com/berth-dev/berth/test/util/apiserver"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: perf run|check [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want run or check", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	root := apiserver.RepoRoot()
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	config := fs.String("config", filepath.Join(root, "test/performance/scheduler/configs/baseline.yaml"), "The scenario.")
	scale := fs.Float64("scale", 1, "Fraction of each workload set to create, for quick checks; the targets are for 1.")
	berth := fs.String("berth", filepath.Join(root, "bin", "berth"), "The controller binary.")
	out := fs.String("out", "", "Output directory; default _output/perf/<config name>.")
	workers := fs.Int("calibration-workers", 32, "Parallel clients of the calibration.")
	calibration := fs.Duration("calibration", 5*time.Second, "How long the calibration writes.")
	creators := fs.Int("creators", 64, "Workloads created at once.")
	finishers := fs.Int("finishers", 64, "Finished writes under way at once, as a job integration's workers; 0 does not bound them.")
	timeout := fs.Duration("timeout", 15*time.Minute, "Longest the scenario may take.")
	profile := fs.Bool("profile", false, "Write the CPU profiles of the controller and the API server over the scenario, and their heap profiles at its end, to the output directory (controller.cpu.pprof, kube-apiserver.heap.pprof, ...).")
	restartEvery := fs.Duration("restart-every", 0, "Kill the controller with SIGKILL at this interval during the scenario and start it again, to show that restarts lose nothing and never admit beyond quota; 0 never does.")
	var preemptionDelay *time.Duration
	fs.Func("preemption-delay", "The controller's preemption.delay instead of its default (5s); 0s evicts at once, as Kueue does.", func(v string) error {
		d, err := time.ParseDuration(v)
		preemptionDelay = &d
		return err
	})
	var retainFinished *time.Duration
	fs.Func("retain-finished", "The controller's objectRetentionPolicies.workloads.afterFinished: finished Workloads are deleted this long after they finish; unset keeps them.", func(v string) error {
		d, err := time.ParseDuration(v)
		retainFinished = &d
		return err
	})
	memoryLimit := fs.String("memory-limit", "1Gi", "The container memory limit the controller is told it has, as the Deployment ships (it keeps Go's heap under half of it); empty for none.")
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New())

	cfg, err := scenario.LoadConfig(*config)
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(filepath.Base(*config), filepath.Ext(*config))
	if *out == "" {
		*out = runner.SummaryDir(root, name)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, runErr := runner.Run(ctx, runner.Options{
		Name: name, Config: cfg, Scale: *scale, Berth: *berth, OutDir: *out,
		CalibrationWorkers: *workers, CalibrationDuration: *calibration, Creators: *creators, Finishers: *finishers, Timeout: *timeout,
		Profile: *profile, RestartEvery: *restartEvery, PreemptionDelay: preemptionDelay, RetainFinished: retainFinished,
		MemoryLimit: *memoryLimit,
	})
	if sum == nil {
		return runErr
	}
	path, err := runner.WriteSummary(*out, sum)
	if err != nil {
		return err
	}
	data, _ := os.ReadFile(path)
	fmt.Printf("%s\n%s", path, data)
	return runErr
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	path := fs.String("summary", filepath.Join(runner.SummaryDir(apiserver.RepoRoot(), "baseline"), "summary.json"), "The summary to check.")
	_ = fs.Parse(args)
	sum, err := runner.ReadSummary(*path)
	if err != nil {
		return err
	}
	targets, err := runner.TargetsFor(sum.Config)
	if err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	misses := runner.Check(sum, targets)
	if len(misses) > 0 {
		return fmt.Errorf("%s misses %d of the %s targets:\n  %s", *path, len(misses), sum.Config, strings.Join(misses, "\n  "))
	}
	if sum.Config == "large" {
		fmt.Printf("%s meets every large target (ratio %v, every workload finished)\n", *path, sum.Ratio)
		return nil
	}
	fmt.Printf("%s meets every baseline target (ratio %v, large avg %v ms, usage %v%%, %v writes per admission, %v cpu s)\n",
		*path, sum.Ratio, sum.Classes["large"].AvgMs, sum.UsagePercent, sum.Controller.WritesPerAdmission, sum.Controller.CPUSeconds)
	return nil
}
