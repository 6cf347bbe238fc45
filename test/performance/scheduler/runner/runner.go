package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/pkg/workloadwriter"
	"github.com/berth-dev/berth/test/performance/scheduler/measure"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
	"github.com/berth-dev/berth/test/util/apiserver"
)

// Options configure a run.
type Options struct {
	// Name names the config in the summary, e.g. baseline.
	Name string
	// Config is the scenario.
	Config *scenario.Config
	// Scale keeps a fraction of the workloads, for quick checks.
	Scale float64
	// Berth is the path of the controller binary.
	Berth string
	// OutDir receives summary.json, the controller's log, workloads.csv
	// (the timeline of every workload) and samples.csv (the run every 5 s:
	// workloads created, admitted and finished, and each process's cores).
	OutDir string
	// CalibrationWorkers and CalibrationDuration shape the calibration.
	CalibrationWorkers  int
	CalibrationDuration time.Duration
	// Creators is how many workloads are created at once.
	Creators int
	// Finishers is how many Finished writes may be under way at once;
	// 0 does not bound them.
	Finishers int
	// Timeout bounds the scenario, from the first creation.
	Timeout time.Duration
	// Profile writes the profiles of the controller and the API server to
	// OutDir (see measure.CPUProfileFile): their CPU over the whole
	// scenario and their heap at its end. Profiling costs each a little
	// CPU.
	Profile bool
	// RestartEvery, when set, kills the controller with SIGKILL at that
	// interval during the scenario and starts it again: the run then
	// shows that restarts lose no workload (every one finishes) and never
	// admit beyond quota (the summary's quota audit). Its wall time
	// includes each new process's wait for the killed one's lease.
	RestartEvery time.Duration
	// PreemptionDelay, when set, is the controller's preemption.delay
	// instead of its default, e.g. 0s to evict at once as Kueue does.
	PreemptionDelay *time.Duration
	// RetainFinished, when set, is the controller's
	// objectRetentionPolicies.workloads.afterFinished: finished Workloads
	// are deleted that long after they finish.
	RetainFinished *time.Duration
	// MemoryLimit is the container memory limit the controller is told it
	// runs under (BERTH_MEMORY_LIMIT), as the Deployment tells it: it
	// keeps Go's heap under half of it. Empty tells it of none.
	MemoryLimit string
}

// controllerSettings is what opts add to the controller's configuration.
func controllerSettings(opts Options) string {
	var extra string
	if d := opts.PreemptionDelay; d != nil {
		extra += fmt.Sprintf("preemption:\n  delay: %s\n", *d)
	}
	if d := opts.RetainFinished; d != nil {
		extra += fmt.Sprintf("objectRetentionPolicies:\n  workloads:\n    afterFinished: %s\n", *d)
	}
	return extra
}

// Run runs the scenario end to end and returns its summary: it starts an
// API server, calibrates it, creates the queues, starts the controller,
// plays the scenario and measures it. A run cut short by its timeout or
// ctx still returns its summary, with an error.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	s, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	server, err := apiserver.Start()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := server.Stop(); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Stopping the API server")
		}
	}()
	ctrl.LoggerFrom(ctx).Info("API server up", "version", server.Version, "host", server.Config.Host)
	cl, err := newClients(server)
	if err != nil {
		return nil, err
	}
	cal, err := measure.Calibrate(ctx, server.Config, cl.c, cl.w, opts.CalibrationWorkers, opts.CalibrationDuration)
	if err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("Calibrated", "apiWritesPerSecond", int(cal.WritesPerSecond), "workloadWritesPerSecond", int(cal.WorkloadWritesPerSecond))
	berth, err := setUp(ctx, cl.c, s, opts, server.Kubeconfig)
	if err != nil {
		return nil, err
	}
	defer func() { _ = berth.stop() }()
	r := &run{opts: opts, s: s, cl: cl, berth: berth}
	res, m, err := r.play(ctx)
	if err != nil {
		return nil, err
	}
	return r.report(ctx, res, m, cal)
}

// prepare expands the scenario and checks what else the run needs before
// it starts anything.
func prepare(opts Options) (*scenario.Scenario, error) {
	s, err := scenario.Generate(opts.Config, opts.Scale)
	if err != nil {
		return nil, err
	}
	if err := checkRestarts(opts); err != nil {
		return nil, err
	}
	return s, os.MkdirAll(opts.OutDir, 0o755)
}

// clients are the runner's own clients of the API server, none of them
// rate limited.
type clients struct {
	cfg *rest.Config
	c   client.Client
	cs  kubernetes.Interface
	// w writes the Finished conditions as Berth's job integrations do.
	w workloadwriter.Writer
}

func newClients(server *apiserver.Server) (clients, error) {
	cl := clients{cfg: measure.Unlimited(server.Config)}
	var err error
	if cl.c, err = client.New(cl.cfg, client.Options{Scheme: server.Client.Scheme()}); err != nil {
		return clients{}, err
	}
	if cl.cs, err = kubernetes.NewForConfig(cl.cfg); err != nil {
		return clients{}, err
	}
	httpClient, err := rest.HTTPClientFor(cl.cfg)
	if err != nil {
		return clients{}, err
	}
	if cl.w, err = workloadwriter.New(cl.cfg, httpClient, server.Client.Scheme()); err != nil {
		return clients{}, err
	}
	return cl, nil
}

// setUp creates the scenario's queues, starts the controller and waits
// until it has loaded them.
func setUp(ctx context.Context, c client.Client, s *scenario.Scenario, opts Options, kubeconfig string) (*controllerProcess, error) {
	if err := createQueues(ctx, c, s, opts.Creators); err != nil {
		return nil, err
	}
	berth, err := startController(ctx, opts.Berth, kubeconfig, opts.OutDir, controllerSettings(opts), opts.MemoryLimit)
	if err != nil {
		return nil, err
	}
	if err := waitActive(ctx, c, len(s.Queues)); err != nil {
		_ = berth.stop()
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("Controller ready; queues active", "clusterQueues", len(s.Queues), "workloads", len(s.Workloads))
	return berth, nil
}

// run is what the steps of one run after its set-up share.
type run struct {
	opts  Options
	s     *scenario.Scenario
	cl    clients
	berth *controllerProcess
}

// report turns the run's measurements into its summary, and what went
// wrong into the error Run returns with it.
func (r *run) report(ctx context.Context, res result, m measured, cal measure.Calibration) (*Summary, error) {
	sum := summarize(r.opts, r.s, res, cal)
	sum.APIServer = m.apiServer
	sum.addAPIServerCost(m.apiServer.WorkloadWrites, m.procs["kube-apiserver"].CPUSeconds+m.procs["etcd"].CPUSeconds, runtime.NumCPU())
	addControllerFigures(context.WithoutCancel(ctx), sum, m, r.berth)
	if q := sum.Quota; q.Violations > 0 {
		res.Errors = append(res.Errors, fmt.Errorf("%d Workload versions held more than their quota; the first: %s", q.Violations, q.FirstViolation))
	}
	if res.Unfinished > 0 {
		dumpStuck(ctx, r.cl.c, res.Stuck, r.opts.OutDir)
		res.Errors = append([]error{fmt.Errorf("%d of %d workloads did not finish in %s (among them %v); see %s",
			res.Unfinished, len(r.s.Workloads), res.Wall, res.Stuck, r.berth.logPath)}, res.Errors...)
	}
	return sum, errors.Join(res.Errors...)
}

// addControllerFigures fills sum's figures of the controller, and of the
// other processes, from m and the controller's own counts.
func addControllerFigures(ctx context.Context, sum *Summary, m measured, berth *controllerProcess) {
	sum.Controller.Process = m.procs["berth"]
	delete(m.procs, "berth")
	sum.Processes = m.procs
	sum.Controller.WatchesStarted = m.watchesStarted
	sum.Controller.Restarts, sum.Controller.Exits = m.killed.restarts, m.killed.exits
	sum.Controller.WritesByVerb, sum.Controller.Writes = m.writes.byVerb, m.writes.total
	if sum.Admissions > 0 {
		sum.Controller.WritesPerAdmission = round(float64(m.writes.total) / float64(sum.Admissions))
	}
	// The controller starts counting with the run: no admission or
	// preemption comes before the first workload.
	last, err := berth.snapshot(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the controller's counts")
		return
	}
	if p := add(last.Preemptions, m.killed.preemptions); len(p) > 0 {
		sum.Controller.PreemptionsByReason = p
	}
	sum.Controller.Admissions = last.Admissions + m.killed.admissions
	if sum.Controller.Admissions != int64(sum.Admissions) && sum.Unfinished == 0 {
		ctrl.LoggerFrom(ctx).Info("The controller counted other admissions than the runner", "controller", sum.Controller.Admissions, "runner", sum.Admissions)
	}
}
