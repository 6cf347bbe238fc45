package runner

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berth-dev/berth/test/performance/scheduler/audit"
	"github.com/berth-dev/berth/test/performance/scheduler/measure"
)

// play creates the workloads on schedule and waits until all are
// finished, measuring the controller's writes, the processes' cost and
// the API server's counts over that time.
func (r *run) play(ctx context.Context) (result, measured, error) {
	// The watch ends with the scenario: an open watch holds the API
	// server's shutdown for its whole grace period.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	rec := newRecorder(ctx, r.cl.w, r.s, r.opts.Finishers)
	if err := audit.WatchWorkloads(watchCtx, r.cl.cfg, r.cl.c.Scheme(), rec.handler(), rec.watchRestarted); err != nil {
		return result{}, measured{}, err
	}
	before, err := readCounters(ctx, r.berth, r.cl.cs)
	if err != nil {
		return result{}, measured{}, err
	}
	start := time.Now()
	rec.begin(start)
	mon := newMonitor(rec, r.berth, before, start, r.opts.RestartEvery)
	defer mon.restarts.stop()
	runCtx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	endProfiles, err := r.startProfiles(runCtx)
	if err != nil {
		return result{}, measured{}, err
	}
	created := make(chan error, 1)
	go func() { created <- createWorkloads(runCtx, r.cl.c, r.s, rec, start, r.opts.Creators) }()
	if err := mon.follow(ctx, runCtx); err != nil {
		return result{}, measured{}, err
	}
	if err := <-created; err != nil && runCtx.Err() == nil {
		return result{}, measured{}, err
	}
	return r.conclude(ctx, mon, endProfiles)
}

// startProfiles starts the profiles of the run if it asked for them, and
// returns the function that ends them and writes them out.
func (r *run) startProfiles(ctx context.Context) (func() error, error) {
	if !r.opts.Profile {
		return func() error { return nil }, nil
	}
	return measure.StartProfiles(ctx, r.cl.cfg, r.berth.pprofURL, r.opts.OutDir)
}

// finishesSeenWait bounds how long the end of a run waits for the watch
// to show the last Finished writes.
const finishesSeenWait = 10 * time.Second

// conclude measures the run's end, once every workload finished or its
// time ran out: a last sample, the recorder's result, the timelines, the
// counters and the profiles.
func (r *run) conclude(ctx context.Context, mon *monitor, endProfiles func() error) (result, measured, error) {
	mon.rec.awaitFinishesSeen(finishesSeenWait)
	mon.sample()
	res := mon.rec.result()
	writeTimelines(ctx, r.opts.OutDir, mon.rec, mon.samples)
	// Measure even when the run was cut short: a summary of a run that
	// did not finish says how far it got.
	after, err := readCounters(context.WithoutCancel(ctx), r.berth, r.cl.cs)
	if err != nil {
		return result{}, measured{}, err
	}
	if err := endProfiles(); err != nil {
		res.Errors = append(res.Errors, err)
	}
	return res, mon.restarts.measured(after), nil
}

// monitor follows a run while its scenario plays: it samples the run
// every 5 s, restarts the controller when a restart is due, and starts it
// again when it exited on its own.
type monitor struct {
	rec      *recorder
	berth    *controllerProcess
	restarts *restarts
	start    time.Time
	samples  []sample
}

// newMonitor follows a run that started at start, with the counters
// before it; it restarts the controller every restartEvery (0 never).
func newMonitor(rec *recorder, berth *controllerProcess, before counters, start time.Time, restartEvery time.Duration) *monitor {
	return &monitor{
		rec: rec, berth: berth, start: start,
		restarts: newRestarts(berth, before, restartEvery),
		samples:  []sample{{CPU: cpuOf(before.procs)}},
	}
}

// follow returns when every workload has finished or runCtx has ended,
// or with the error of a restart that failed. Restarts take ctx, the
// outer context: a restart under way completes even if the run's time
// ends meanwhile, so that the end can measure.
func (m *monitor) follow(ctx, runCtx context.Context) error {
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	for {
		select {
		case <-m.rec.done():
			return nil
		case <-runCtx.Done():
			return nil
		case <-m.berth.exited:
			if err := m.restarts.recover(ctx); err != nil {
				return err
			}
		case <-progress.C:
			m.restarts.observe(ctx)
			m.sample()
			ctrl.LoggerFrom(ctx).Info("Progress", m.rec.progress()...)
		case <-m.restarts.due:
			if err := m.restarts.restart(ctx); err != nil {
				return err
			}
		}
	}
}

// sample records the run's state now.
func (m *monitor) sample() {
	cpu := m.restarts.controllerCPU(cpuOf(measure.ReadProcesses(m.berth.pid())))
	m.samples = append(m.samples, sample{At: time.Since(m.start), Counts: m.rec.count(), CPU: cpu})
}
