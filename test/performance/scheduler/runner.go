package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/workloadwriter"
	"github.com/berth-dev/berth/test/util/apiserver"
)

// Options configure a run.
type Options struct {
	// Name names the config in the summary, e.g. baseline.
	Name string
	// Config is the scenario.
	Config *Config
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
	// OutDir (see CPUProfileFile): their CPU over the whole scenario
	// and their heap at its end. Profiling costs each a little CPU.
	Profile bool
	// RestartEvery, when set, kills the controller with SIGKILL at that
	// interval during the scenario and starts it again: the run then
	// shows that restarts lose no workload (every one finishes) and never
	// admit beyond quota (the summary's quota audit). Its wall time
	// includes each new process's wait for the killed one's lease.
	RestartEvery time.Duration
}

// Run runs the scenario end to end and returns its summary.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	log := ctrl.LoggerFrom(ctx)
	s, err := Generate(opts.Config, opts.Scale)
	if err != nil {
		return nil, err
	}
	if err := checkRestarts(opts); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, err
	}
	server, err := apiserver.Start()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := server.Stop(); err != nil {
			log.Error(err, "Stopping the API server")
		}
	}()
	log.Info("API server up", "version", server.Version, "host", server.Config.Host)

	cfg := unlimited(server.Config)
	c, err := client.New(cfg, client.Options{Scheme: server.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	// The Finished writes go as Berth's job integrations write them.
	w, err := workloadwriter.New(cfg, httpClient, server.Client.Scheme())
	if err != nil {
		return nil, err
	}
	cal, err := Calibrate(ctx, server.Config, c, w, opts.CalibrationWorkers, opts.CalibrationDuration)
	if err != nil {
		return nil, err
	}
	log.Info("Calibrated", "apiWritesPerSecond", int(cal.WritesPerSecond), "workloadWritesPerSecond", int(cal.WorkloadWritesPerSecond))

	if err := createQueues(ctx, c, s, opts.Creators); err != nil {
		return nil, err
	}
	berth, err := StartController(ctx, opts.Berth, server.Kubeconfig, opts.OutDir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = berth.Stop() }()
	if err := waitActive(ctx, c, len(s.Queues)); err != nil {
		return nil, err
	}
	log.Info("Controller ready; queues active", "clusterQueues", len(s.Queues), "workloads", len(s.Workloads))

	res, m, err := runScenario(ctx, cfg, c, w, s, berth, opts)
	if err != nil {
		return nil, err
	}
	sum := summarize(opts, s, res, cal)
	sum.APIServer = m.apiServer
	sum.addAPIServerCost(m.apiServer.WorkloadWrites, m.procs["kube-apiserver"].CPUSeconds+m.procs["etcd"].CPUSeconds, runtime.NumCPU())
	addControllerFigures(context.WithoutCancel(ctx), sum, m, berth)
	if q := sum.Quota; q.Violations > 0 {
		res.Errors = append(res.Errors, fmt.Errorf("%d Workload versions held more than their quota; the first: %s", q.Violations, q.FirstViolation))
	}
	if res.Unfinished > 0 {
		dumpStuck(ctx, c, res.Stuck, opts.OutDir)
		err = fmt.Errorf("%d of %d workloads did not finish in %s (among them %v); see %s", res.Unfinished, len(s.Workloads), res.Wall, res.Stuck, berth.Log)
	}
	return sum, errors.Join(append([]error{err}, res.Errors...)...)
}

// addControllerFigures fills sum's figures of the controller, and of the
// other processes, from m and the controller's own counts.
func addControllerFigures(ctx context.Context, sum *Summary, m measured, berth *ControllerProcess) {
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
	if p := add(last.preemptions, m.killed.preemptions); len(p) > 0 {
		sum.Controller.PreemptionsByReason = p
	}
	sum.Controller.Admissions = last.admissions + m.killed.admissions
	if sum.Controller.Admissions != int64(sum.Admissions) && sum.Unfinished == 0 {
		ctrl.LoggerFrom(ctx).Info("The controller counted other admissions than the runner", "controller", sum.Controller.Admissions, "runner", sum.Admissions)
	}
}

type writeCounts struct {
	byVerb map[string]int64
	total  int64
}

// measured is what runScenario measures besides the recorder's result.
type measured struct {
	writes         writeCounts
	procs          map[string]Process
	apiServer      APIServer
	watchesStarted map[string]int64
	// killed is what the controller processes killed by restarts did;
	// writes, watchesStarted and procs include it.
	killed killedControllers
}

// runScenario creates the workloads on schedule and waits until all are
// finished, measuring the controller's writes, the processes' cost and
// the API server's counts over that time.
func runScenario(ctx context.Context, cfg *rest.Config, c client.Client, w workloadwriter.Writer, s *Scenario, berth *ControllerProcess, opts Options) (Result, measured, error) {
	// The watch ends with the scenario: an open watch holds the API
	// server's shutdown for its whole grace period.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	rec := NewRecorder(ctx, w, s)
	rec.LimitFinishes(opts.Finishers)
	if err := watchWorkloads(watchCtx, cfg, c, rec); err != nil {
		return Result{}, measured{}, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Result{}, measured{}, err
	}
	before, err := readCounters(ctx, berth, cs)
	if err != nil {
		return Result{}, measured{}, err
	}
	start := time.Now()
	rec.Start(start)
	samples := []Sample{{CPU: cpuOf(before.procs)}}
	restarts := newRestarts(berth, before, opts.RestartEvery)
	defer restarts.stop()
	sample := func() {
		cpu := restarts.controllerCPU(cpuOf(readProcesses(berth.Pid())))
		samples = append(samples, Sample{At: time.Since(start), Counts: rec.Counts(), CPU: cpu})
	}
	runCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	finishProfiles := func() error { return nil }
	if opts.Profile {
		if finishProfiles, err = startProfiles(runCtx, cfg, berth, opts.OutDir); err != nil {
			return Result{}, measured{}, err
		}
	}
	createErr := make(chan error, 1)
	go func() { createErr <- createWorkloads(runCtx, c, s, rec, start, opts.Creators) }()
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
wait:
	for {
		select {
		case <-rec.Done():
			break wait
		case <-runCtx.Done():
			break wait
		case <-berth.exited:
			if err := restarts.recover(ctx); err != nil {
				cancel()
				return Result{}, measured{}, err
			}
		case <-progress.C:
			restarts.observe(ctx)
			sample()
			ctrl.LoggerFrom(ctx).Info("Progress", rec.Progress()...)
		case <-restarts.due:
			// The outer context: a restart under way completes even if
			// the run's time ends meanwhile, so the end can measure.
			if err := restarts.restart(ctx); err != nil {
				cancel()
				return Result{}, measured{}, err
			}
		}
	}
	if err := <-createErr; err != nil && runCtx.Err() == nil {
		return Result{}, measured{}, err
	}
	sample()
	res := rec.Result()
	writeTimelines(ctx, opts.OutDir, rec, samples)
	// Measure even when the run was cut short: a summary of a run that
	// did not finish says how far it got.
	after, err := readCounters(context.WithoutCancel(ctx), berth, cs)
	if err != nil {
		return Result{}, measured{}, err
	}
	if err := finishProfiles(); err != nil {
		res.Errors = append(res.Errors, err)
	}
	return res, restarts.measured(after), nil
}

// writeTimelines writes workloads.csv and samples.csv to dir.
func writeTimelines(ctx context.Context, dir string, rec *Recorder, samples []Sample) {
	if err := writeCSV(filepath.Join(dir, "workloads.csv"), rec.WriteTimeline); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Writing the workloads' timeline")
	}
	if err := writeCSV(filepath.Join(dir, "samples.csv"), func(w io.Writer) error { return WriteSamples(w, samples) }); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Writing the run's samples")
	}
}

// counters are the running totals runScenario reads before and after the
// scenario; the run's figures are their differences.
type counters struct {
	writes, watchesStarted, apiServer map[string]int64
	procs                             map[string]Process
}

// readCounters reads the controller's writes and watches, the API
// server's counts and every process's cost, as they stand.
func readCounters(ctx context.Context, berth *ControllerProcess, cs kubernetes.Interface) (counters, error) {
	var c counters
	snap, err := berth.snapshot(ctx)
	if err != nil {
		return c, err
	}
	c.writes, c.watchesStarted = snap.writes, snap.watchesStarted
	if c.apiServer, err = apiServerCounts(ctx, cs); err != nil {
		return c, err
	}
	c.procs = readProcesses(berth.Pid())
	return c, nil
}

// since is what happened between before and c.
func (c counters) since(before counters) measured {
	m := measured{procs: c.procs, apiServer: APIServer{
		TerminatedWatchers: c.apiServer["terminatedWatchers"] - before.apiServer["terminatedWatchers"],
		Conflicts:          c.apiServer["conflicts"] - before.apiServer["conflicts"],
		WorkloadWrites:     c.apiServer["writes"] - before.apiServer["writes"],
	}}
	for name, n := range c.apiServer {
		if request, ok := strings.CutPrefix(name, writesPrefix); ok && n > before.apiServer[name] {
			if m.apiServer.WorkloadWritesByRequest == nil {
				m.apiServer.WorkloadWritesByRequest = map[string]int64{}
			}
			m.apiServer.WorkloadWritesByRequest[request] = n - before.apiServer[name]
		}
	}
	for name, p := range m.procs {
		p.CPUSeconds = round(p.CPUSeconds - before.procs[name].CPUSeconds)
		m.procs[name] = p
	}
	m.writes.byVerb, m.writes.total = subtract(c.writes, before.writes)
	m.watchesStarted, _ = subtract(c.watchesStarted, before.watchesStarted)
	return m
}

// apiServerCounts reads the API server's metrics with ParseAPIServer.
func apiServerCounts(ctx context.Context, cs kubernetes.Interface) (map[string]int64, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	defer func() { _ = body.Close() }()
	return ParseAPIServer(body)
}

// writeCSV creates path and lets write fill it.
func writeCSV(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// cpuOf is the CPU seconds of each process.
func cpuOf(procs map[string]Process) map[string]float64 {
	out := make(map[string]float64, len(procs))
	for name, p := range procs {
		out[name] = p.CPUSeconds
	}
	return out
}

// readProcesses reads the cost of the controller, the API server and etcd.
func readProcesses(berthPid int) map[string]Process {
	pids := childrenByName(os.Getpid(), "kube-apiserver", "etcd")
	pids["berth"] = berthPid
	// The runner itself plays the users and the jobs: it creates the
	// workloads, watches them and finishes them.
	pids["runner"] = os.Getpid()
	out := map[string]Process{}
	for name, pid := range pids {
		if p, err := ReadProcess(pid); err == nil {
			out[name] = p
		}
	}
	return out
}

// createWorkloads creates each workload at its offset from start, with
// workers requests at once.
func createWorkloads(ctx context.Context, c client.Client, s *Scenario, rec *Recorder, start time.Time, workers int) error {
	todo := make(chan *Planned, 4*workers)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range todo {
				rec.Created(p, time.Now())
				if err := c.Create(ctx, Workload(p)); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("creating workload %s/%s: %w", p.Namespace, p.Name, err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range s.Workloads {
		p := &s.Workloads[i]
		if d := time.Until(start.Add(p.Offset)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		todo <- p
	}
	close(todo)
	wg.Wait()
	return errors.Join(errs...)
}

// createQueues creates the flavor, the controller's namespace and, per
// ClusterQueue, its namespace, the ClusterQueue and the LocalQueue.
func createQueues(ctx context.Context, c client.Client, s *Scenario, workers int) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "berth-system"}},
		&berthv1alpha1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: FlavorName}},
	}
	for _, q := range s.Queues {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: q.Name}}, ClusterQueue(q), LocalQueue(q))
	}
	work := make(chan client.Object)
	errCh := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for obj := range work {
				// A LocalQueue's namespace is created just before it;
				// retry while it is not there yet.
				err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
					err := c.Create(ctx, obj)
					return err == nil || apierrors.IsAlreadyExists(err), nil
				})
				if err != nil {
					select {
					case errCh <- fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err):
					default:
					}
				}
			}
		})
	}
	for _, obj := range objs {
		work <- obj
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errCh:
		return err
	default:
		return nil
	}
}

// waitActive waits until the controller reports n ClusterQueues Active:
// it is then the leader and has loaded them.
func waitActive(ctx context.Context, c client.Client, n int) error {
	var active int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cqs := &berthv1alpha1.ClusterQueueList{}
		if err := c.List(ctx, cqs); err != nil {
			return false, nil
		}
		active = 0
		for i := range cqs.Items {
			if meta.IsStatusConditionTrue(cqs.Items[i].Status.Conditions, berthv1alpha1.ConditionActive) {
				active++
			}
		}
		return active == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d ClusterQueues to be active (%d are): %w", n, active, err)
	}
	return nil
}

// summarize turns a run's measurements into its summary.
func summarize(opts Options, s *Scenario, res Result, cal Calibration) *Summary {
	scenario := ScenarioBound(s)
	api := APIBound(len(s.Workloads), cal.WritesPerSecond)
	lower := max(scenario, api)
	workloadAPI := APIBound(len(s.Workloads), cal.WorkloadWritesPerSecond)
	var nominal int64
	for _, co := range s.Cohorts {
		nominal += co.CapacityMilli
	}
	sum := &Summary{
		Config: opts.Name, Scale: opts.Scale, Workloads: len(s.Workloads),
		WallMs: res.Wall.Milliseconds(), ScenarioBoundMs: scenario.Milliseconds(), APIBoundMs: api.Milliseconds(),
		APIWritesPerSecond: round(cal.WritesPerSecond), LowerBoundMs: lower.Milliseconds(),
		WorkloadWritesPerSecond: round(cal.WorkloadWritesPerSecond),
		WorkloadAPIBoundMs:      workloadAPI.Milliseconds(),
		Classes:                 map[string]Stats{},
		UsagePercent:            UsagePercent(res.Periods, res.Wall, nominal),
		Quota:                   res.Quota,
		Admissions:              res.Admissions, Evictions: res.Evictions, Unfinished: res.Unfinished,
	}
	if lower > 0 {
		sum.Ratio = round(float64(res.Wall) / float64(lower))
	}
	if tighter := max(scenario, workloadAPI); tighter > 0 {
		sum.WorkloadRatio = round(float64(res.Wall) / float64(tighter))
		if lower > 0 {
			sum.FloorRatio = round(float64(tighter) / float64(lower))
		}
	}
	if res.Wall > 0 {
		sum.AdmissionsPerSecond = round(float64(res.Admissions) / res.Wall.Seconds())
	}
	for class, waits := range res.WaitByClass {
		sum.Classes[class] = NewStats(waits)
	}
	return sum
}

// SummaryDir is where a config's summary goes: _output/perf/<name>.
func SummaryDir(root, name string) string { return filepath.Join(root, "_output", "perf", name) }

// dumpStuck writes the current state of a few unfinished workloads to
// stuck.yaml in dir, for looking into a run that did not finish.
func dumpStuck(ctx context.Context, c client.Client, keys []string, dir string) {
	var out []byte
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		wl := &berthv1alpha1.Workload{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, wl); err != nil {
			out = append(out, fmt.Sprintf("# %s: %v\n", key, err)...)
			continue
		}
		wl.ManagedFields = nil
		data, _ := yaml.Marshal(wl)
		out = append(out, "---\n"...)
		out = append(out, data...)
	}
	_ = os.WriteFile(filepath.Join(dir, "stuck.yaml"), out, 0o644)
}
