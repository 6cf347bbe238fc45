package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
)

// MinRestartEvery is the shortest RestartEvery: a new controller waits up
// to the leader election's lease duration, 15 s by default, for the lease
// of the one killed, and 2 s more between its tries for it; it must have
// time to admit before the next kill.
const MinRestartEvery = 30 * time.Second

// checkRestarts refuses restart options a run cannot honour.
func checkRestarts(opts Options) error {
	if opts.RestartEvery <= 0 {
		return nil
	}
	if opts.Profile {
		return errors.New("a run cannot both profile the controller and restart it")
	}
	if opts.RestartEvery < MinRestartEvery {
		return fmt.Errorf("restarts every %s: at least %s apart, or no controller would ever lead", opts.RestartEvery, MinRestartEvery)
	}
	return nil
}

// killedControllers adds up what the controller processes that
// RestartEvery killed did, each from the run's start or its own.
type killedControllers struct {
	restarts int
	// exits counts the processes that exited on their own, which the
	// run started again as a Deployment's kubelet would.
	exits                               int
	writes, watchesStarted, preemptions map[string]int64
	admissions                          int64
	process                             measure.Process
}

// ended counts the processes that ended during the run, killed or not.
func (k killedControllers) ended() int { return k.restarts + k.exits }

// restarts restarts the controller during a run and keeps the counts of
// the processes it killed, so that the run's figures add up all of them.
type restarts struct {
	berth *controllerProcess
	// due ticks when the next restart is due; nil, never, without
	// RestartEvery.
	due    <-chan time.Time
	ticker *time.Ticker
	// first are the counters at the run's start; base is the current
	// process's zero: first for the first process, zero for the others.
	first, base counters
	killed      killedControllers
	// latest is the current process's last snapshot (observe), which is
	// all that is left of its counts if it exits on its own.
	latest *controllerSnapshot
}

// newRestarts restarts berth every interval (never if it is 0); before
// are the counters at the run's start.
func newRestarts(berth *controllerProcess, before counters, every time.Duration) *restarts {
	r := &restarts{berth: berth, first: before, base: before}
	if every > 0 {
		r.ticker = time.NewTicker(every)
		r.due = r.ticker.C
	}
	return r
}

// stop stops the restarts.
func (r *restarts) stop() {
	if r.ticker != nil {
		r.ticker.Stop()
	}
}

// restart kills the controller and starts it again. Just before, it reads
// what the process did since its zero.
func (r *restarts) restart(ctx context.Context) error {
	last, err := r.berth.snapshot(ctx)
	if err != nil {
		return err
	}
	if err := r.berth.restart(ctx); err != nil {
		return fmt.Errorf("restarting the controller: %w", err)
	}
	r.killed.restarts++
	r.account(last)
	ctrl.LoggerFrom(ctx).Info("Restarted the controller", "restarts", r.killed.restarts)
	return nil
}

// observe keeps a snapshot of the running controller, for recover.
func (r *restarts) observe(ctx context.Context) {
	if snap, err := r.berth.snapshot(ctx); err == nil {
		r.latest = &snap
	}
}

// recover starts the controller again after it exited on its own: a lost
// lease, when the API server answers its renewals too slowly, ends the
// process, and its Deployment's kubelet would start it again. Its counts
// are those of its last snapshot (observe), its CPU and memory the
// operating system's.
func (r *restarts) recover(ctx context.Context) error {
	var last controllerSnapshot
	if r.latest != nil {
		last = *r.latest
	}
	last.process = r.berth.exitedCost()
	ctrl.LoggerFrom(ctx).Info("The controller exited on its own; starting it again", "error", r.berth.exitErr, "log", r.berth.logPath)
	if err := r.berth.start(ctx); err != nil {
		return fmt.Errorf("starting the controller again after it exited: %w", err)
	}
	r.killed.exits++
	r.account(last)
	return nil
}

// account adds last, the final counts of a process that ended, to the
// killed processes' figures, and makes the next process's zero the base.
func (r *restarts) account(last controllerSnapshot) {
	k := &r.killed
	writes, _ := subtract(last.Writes, r.base.writes)
	watches, _ := subtract(last.WatchesStarted, r.base.watchesStarted)
	k.writes, k.watchesStarted = add(k.writes, writes), add(k.watchesStarted, watches)
	k.preemptions, k.admissions = add(k.preemptions, last.Preemptions), k.admissions+last.Admissions
	k.process.CPUSeconds += last.process.CPUSeconds - r.base.procs["berth"].CPUSeconds
	k.process.MaxRSSBytes = max(k.process.MaxRSSBytes, last.process.MaxRSSBytes)
	r.base.writes, r.base.watchesStarted = nil, nil
	r.base.procs = maps.Clone(r.base.procs)
	r.base.procs["berth"] = measure.Process{}
	r.latest = nil
}

// controllerCPU continues the controller's CPU in cpu, a sample of the
// running processes, from where the killed processes left it.
func (r *restarts) controllerCPU(cpu map[string]float64) map[string]float64 {
	if r.killed.ended() > 0 {
		cpu["berth"] += r.first.procs["berth"].CPUSeconds + r.killed.process.CPUSeconds
	}
	return cpu
}

// measured is what the run measured, given the counters at its end.
func (r *restarts) measured(after counters) measured {
	return after.since(r.base).withKilled(r.killed)
}
