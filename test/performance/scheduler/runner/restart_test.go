package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
)

// TestKilledControllersAddUp: a run's controller figures are the first
// process's since the start, plus each restarted one's from its own start.
func TestKilledControllersAddUp(t *testing.T) {
	k := killedControllers{
		restarts:       2,
		writes:         map[string]int64{"PUT": 700, "POST": 10},
		watchesStarted: map[string]int64{"workloads": 2},
		process:        measure.Process{CPUSeconds: 4.5, MaxRSSBytes: 300},
	}
	last := measured{
		writes:         writeCounts{byVerb: map[string]int64{"PUT": 300, "PATCH": 5}, total: 305},
		watchesStarted: map[string]int64{"workloads": 1, "clusterqueues": 1},
		procs:          map[string]measure.Process{"berth": {CPUSeconds: 2.25, MaxRSSBytes: 200}, "etcd": {CPUSeconds: 1}},
	}
	got := last.withKilled(k)
	want := measured{
		writes:         writeCounts{byVerb: map[string]int64{"PUT": 1000, "POST": 10, "PATCH": 5}, total: 1015},
		watchesStarted: map[string]int64{"workloads": 3, "clusterqueues": 1},
		procs:          map[string]measure.Process{"berth": {CPUSeconds: 6.75, MaxRSSBytes: 300}, "etcd": {CPUSeconds: 1}},
		killed:         k,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(measured{}, writeCounts{}, killedControllers{})); diff != "" {
		t.Errorf("withKilled (-want +got):\n%s", diff)
	}
	// A process that exited on its own adds up as one the run killed.
	exited := k
	exited.restarts, exited.exits = 0, 1
	if got := last.withKilled(exited); got.writes.total != 1015 || got.procs["berth"].CPUSeconds != 6.75 {
		t.Errorf("after an exit: %d writes, %v CPU-seconds; want 1015, 6.75", got.writes.total, got.procs["berth"].CPUSeconds)
	}
	if got := last.withKilled(killedControllers{}); got.writes.total != 305 || got.procs["berth"].CPUSeconds != 2.25 {
		t.Errorf("with no restart the figures changed: %+v", got)
	}
}
