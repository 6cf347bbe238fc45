package runner

import (
	"context"
	"maps"

	"k8s.io/client-go/kubernetes"

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
)

// counters are the running totals a run reads before and after the
// scenario; the run's figures are their differences.
type counters struct {
	writes, watchesStarted map[string]int64
	apiServer              measure.APIServerCounts
	procs                  map[string]measure.Process
}

// readCounters reads the controller's writes and watches, the API
// server's counts and every process's cost, as they stand.
func readCounters(ctx context.Context, berth *controllerProcess, cs kubernetes.Interface) (counters, error) {
	var c counters
	snap, err := berth.snapshot(ctx)
	if err != nil {
		return c, err
	}
	c.writes, c.watchesStarted = snap.Writes, snap.WatchesStarted
	if c.apiServer, err = measure.ReadAPIServer(ctx, cs); err != nil {
		return c, err
	}
	c.procs = measure.ReadProcesses(berth.pid())
	return c, nil
}

type writeCounts struct {
	byVerb map[string]int64
	total  int64
}

// measured is what a run measures besides the recorder's result.
type measured struct {
	writes         writeCounts
	procs          map[string]measure.Process
	apiServer      APIServer
	watchesStarted map[string]int64
	// killed is what the controller processes killed by restarts did;
	// writes, watchesStarted and procs include it.
	killed killedControllers
}

// since is what happened between before and c.
func (c counters) since(before counters) measured {
	a, b := c.apiServer, before.apiServer
	m := measured{procs: c.procs, apiServer: APIServer{
		TerminatedWatchers: a.TerminatedWatchers - b.TerminatedWatchers,
		Conflicts:          a.Conflicts - b.Conflicts,
		WorkloadWrites:     a.Writes - b.Writes,
	}}
	for request, n := range a.WritesByRequest {
		if n > b.WritesByRequest[request] {
			if m.apiServer.WorkloadWritesByRequest == nil {
				m.apiServer.WorkloadWritesByRequest = map[string]int64{}
			}
			m.apiServer.WorkloadWritesByRequest[request] = n - b.WritesByRequest[request]
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

// withKilled adds the killed controllers' figures to m's.
func (m measured) withKilled(k killedControllers) measured {
	m.killed = k
	if k.ended() == 0 {
		return m
	}
	m.writes.byVerb = add(m.writes.byVerb, k.writes)
	m.writes.total = 0
	for _, n := range m.writes.byVerb {
		m.writes.total += n
	}
	m.watchesStarted = add(m.watchesStarted, k.watchesStarted)
	m.procs = maps.Clone(m.procs)
	p := m.procs["berth"]
	p.CPUSeconds = round(p.CPUSeconds + k.process.CPUSeconds)
	p.MaxRSSBytes = max(p.MaxRSSBytes, k.process.MaxRSSBytes)
	m.procs["berth"] = p
	return m
}

// cpuOf is the CPU seconds of each process.
func cpuOf(procs map[string]measure.Process) map[string]float64 {
	out := make(map[string]float64, len(procs))
	for name, p := range procs {
		out[name] = p.CPUSeconds
	}
	return out
}

// subtract is after - before, per key, and the sum of the differences.
func subtract(after, before map[string]int64) (map[string]int64, int64) {
	out := map[string]int64{}
	var total int64
	for m, v := range after {
		if d := v - before[m]; d != 0 {
			out[m] = d
			total += d
		}
	}
	return out, total
}

// add returns the sum of a and b by key, leaving both unchanged.
func add(a, b map[string]int64) map[string]int64 {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]int64{}
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
