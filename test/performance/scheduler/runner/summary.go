package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/berth-dev/berth/test/performance/scheduler/audit"
	"github.com/berth-dev/berth/test/performance/scheduler/measure"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

// Summary is what a run reports, written to summary.json.
type Summary struct {
	Config    string  `json:"config"`
	Scale     float64 `json:"scale"`
	Workloads int     `json:"workloads"`

	WallMs             int64   `json:"wallMs"`
	ScenarioBoundMs    int64   `json:"scenarioBoundMs"`
	APIBoundMs         int64   `json:"apiBoundMs"`
	APIWritesPerSecond float64 `json:"apiWritesPerSecond"`
	// WorkloadWritesPerSecond and WorkloadAPIBoundMs are the same
	// calibration and bound measured with Workload writes rather than
	// ConfigMap ones: a tighter bound, since a Workload write costs the
	// API server several times a ConfigMap write. lowerBoundMs and ratio
	// keep the ConfigMap figure.
	WorkloadWritesPerSecond float64 `json:"workloadWritesPerSecond"`
	WorkloadAPIBoundMs      int64   `json:"workloadApiBoundMs"`
	LowerBoundMs            int64   `json:"lowerBoundMs"`
	// Ratio is WallMs / LowerBoundMs: 1 is as fast as any system can be.
	Ratio float64 `json:"ratio"`
	// WorkloadRatio is WallMs over the larger of ScenarioBoundMs and
	// WorkloadAPIBoundMs: the same ratio against the tighter bound.
	WorkloadRatio float64 `json:"workloadRatio"`
	// FloorRatio is the lowest ratio any run on this machine can reach:
	// the larger of ScenarioBoundMs and WorkloadAPIBoundMs over
	// LowerBoundMs. A ratio target below it is out of this machine's reach,
	// whatever the controller does.
	FloorRatio float64 `json:"floorRatio"`
	// CPUBoundMs is the time the API server and etcd need, on all of the
	// machine's Cores, for the Workload writes any system must make (3 per
	// workload), at the CPU they spent per Workload write in this run
	// (APIServer.CPUMsPerWorkloadWrite). Unlike the bounds above, it counts
	// what serving the watches of the run costs them; it is an estimate
	// from this run, not a bound measured apart from it.
	CPUBoundMs int64 `json:"cpuBoundMs"`
	// Cores is how many CPUs the machine has; every process of the run
	// shares them.
	Cores int `json:"cores"`

	// Classes is the time to admission per workload class.
	Classes map[string]Stats `json:"classes"`
	// FinishOverhang is how long after its runtime each workload's finish
	// was written, from when the runner saw it admitted: the runner's own
	// lag in ending work, the Finished writes waiting for the API server
	// or for a free finisher. The controller sees the quota held that much
	// longer than the scenario's runtimes, and may preempt for it.
	FinishOverhang Stats `json:"finishOverhang"`
	// UsagePercent is the quota in use over the nominal quota of all
	// ClusterQueues, averaged over the wall time.
	UsagePercent float64 `json:"usagePercent"`
	// Admissions counts each workload's admissions: its first, and one
	// more after each eviction.
	Admissions int `json:"admissions"`
	// Evictions counts the evictions of workloads, each of which the
	// workload ran again after. Admissions and Evictions are the
	// runner's, from the watch and the workloads' requeue counts; the
	// controller's own counts are Controller.Admissions and
	// Controller.PreemptionsByReason.
	Evictions int `json:"evictions"`
	// Unfinished counts the workloads not finished when the run stopped
	// (timeout or interrupt); WallMs is then the time until it stopped.
	Unfinished          int     `json:"unfinished"`
	AdmissionsPerSecond float64 `json:"admissionsPerSecond"`
	// Quota is the audit that no admission went beyond quota.
	Quota audit.Report `json:"quota"`

	Controller Controller                 `json:"controller"`
	APIServer  APIServer                  `json:"apiServer"`
	Processes  map[string]measure.Process `json:"processes,omitempty"`
}

// APIServer is what the API server counted, over the run, of what makes
// Workloads slower than its writes alone.
type APIServer struct {
	// TerminatedWatchers counts the watches of Workloads it closed because
	// their client fell behind. It sends each event to every watcher in
	// turn and waits at most 50 ms a second for a watcher with no room;
	// then it closes that watch, and its client starts another from where
	// it was. While it waits, every other watcher waits too.
	TerminatedWatchers int64 `json:"terminatedWatchers"`
	// Conflicts counts the Workload writes it refused because the object
	// had changed since the version they were computed from.
	Conflicts int64 `json:"conflicts"`
	// WorkloadWrites counts the Workload writes (POST, PUT, PATCH) it
	// stored: the runner's and the controller's.
	WorkloadWrites int64 `json:"workloadWrites"`
	// WorkloadWritesByRequest splits WorkloadWrites by verb and
	// subresource ("POST", "PUT status"), to hold against the writes the
	// runner and the controller say they made.
	WorkloadWritesByRequest map[string]int64 `json:"workloadWritesByRequest,omitempty"`
	// CPUMsPerWorkloadWrite is the CPU the API server and etcd spent in the
	// run, everything included (reads, watches, refused writes, the
	// queues' status), per Workload write they stored.
	CPUMsPerWorkloadWrite float64 `json:"cpuMsPerWorkloadWrite"`
}

// Stats are a distribution's figures in milliseconds.
type Stats struct {
	Count int     `json:"count"`
	AvgMs float64 `json:"avgMs"`
	P50Ms float64 `json:"p50Ms"`
	P95Ms float64 `json:"p95Ms"`
	MaxMs float64 `json:"maxMs"`
}

// Controller is what the Berth controller process cost.
type Controller struct {
	measure.Process
	// Writes are the API writes it sent (POST, PUT, PATCH, DELETE).
	Writes       int64            `json:"writes"`
	WritesByVerb map[string]int64 `json:"writesByVerb"`
	// Admissions counts the admissions it wrote.
	Admissions int64 `json:"admissions"`
	// PreemptionsByReason counts the preemptions the controller made, by
	// reason (InClusterQueue, InCohortReclamation, ...).
	PreemptionsByReason map[string]int64 `json:"preemptionsByReason,omitempty"`
	// WatchesStarted counts the watches it opened during the run, by
	// resource: each is one the API server closed (or ended after its 5 to
	// 10 minutes) and the controller opened again.
	WatchesStarted     map[string]int64 `json:"watchesStarted,omitempty"`
	WritesPerAdmission float64          `json:"writesPerAdmission"`
	// Restarts counts the times the run killed the controller and started
	// it again (perf run --restart-every); its figures above add up every
	// process it ran.
	Restarts int `json:"restarts,omitempty"`
	// Exits counts the times the controller exited on its own during the
	// run (it gives up leading when the API server has not answered its
	// lease renewals for the lease's renewDeadline) and the run started it
	// again, as its Deployment's kubelet would. Its figures include each
	// such process's counts as of its last scrape, at most 5 s before it
	// ended. perf check counts an exit as a miss.
	Exits int `json:"exits,omitempty"`
}

// period is quota held from Start to End, relative to the run's start.
type period struct {
	Start, End time.Duration
	Milli      int64
}

// newStats summarises durations; the zero Stats for none.
func newStats(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	ms := make([]float64, len(ds))
	var sum float64
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	sort.Float64s(ms)
	return Stats{
		Count: len(ms),
		AvgMs: round(sum / float64(len(ms))),
		P50Ms: round(percentile(ms, 50)),
		P95Ms: round(percentile(ms, 95)),
		MaxMs: round(ms[len(ms)-1]),
	}
}

// percentile is the nearest-rank p-th percentile of sorted values: the
// smallest value that at least p percent of the values do not exceed.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// usagePercent is the time average, over [0, window), of the quota the
// periods hold, as a percentage of nominalMilli. Parts of periods outside
// the window do not count.
func usagePercent(periods []period, window time.Duration, nominalMilli int64) float64 {
	if window <= 0 || nominalMilli <= 0 {
		return 0
	}
	var integral float64 // milli-cpu x ns
	for _, p := range periods {
		start, end := max(p.Start, 0), min(p.End, window)
		if end > start {
			integral += float64(p.Milli) * float64(end-start)
		}
	}
	return round(100 * integral / (float64(nominalMilli) * float64(window)))
}

// addAPIServerCost fills the API server's cost per Workload write and
// CPUBoundMs from the Workload writes it stored and the CPU-seconds it and
// etcd spent, on a machine of cores CPUs.
func (s *Summary) addAPIServerCost(workloadWrites int64, cpuSeconds float64, cores int) {
	s.Cores = cores
	s.APIServer.WorkloadWrites = workloadWrites
	if workloadWrites == 0 || cores == 0 {
		return
	}
	perWrite := cpuSeconds * 1000 / float64(workloadWrites)
	s.APIServer.CPUMsPerWorkloadWrite = round(perWrite)
	s.CPUBoundMs = int64(float64(scenario.WritesPerWorkload*s.Workloads) * perWrite / float64(cores))
}

// summarize turns a run's measurements into its summary.
func summarize(opts Options, s *scenario.Scenario, res result, cal measure.Calibration) *Summary {
	bound := scenario.Bound(s)
	api := scenario.APIBound(len(s.Workloads), cal.WritesPerSecond)
	lower := max(bound, api)
	workloadAPI := scenario.APIBound(len(s.Workloads), cal.WorkloadWritesPerSecond)
	var nominal int64
	for _, co := range s.Cohorts {
		nominal += co.CapacityMilli
	}
	sum := &Summary{
		Config: opts.Name, Scale: opts.Scale, Workloads: len(s.Workloads),
		WallMs: res.Wall.Milliseconds(), ScenarioBoundMs: bound.Milliseconds(), APIBoundMs: api.Milliseconds(),
		APIWritesPerSecond: round(cal.WritesPerSecond), LowerBoundMs: lower.Milliseconds(),
		WorkloadWritesPerSecond: round(cal.WorkloadWritesPerSecond),
		WorkloadAPIBoundMs:      workloadAPI.Milliseconds(),
		Classes:                 map[string]Stats{},
		UsagePercent:            usagePercent(res.Periods, res.Wall, nominal),
		Quota:                   res.Quota,
		Admissions:              res.Admissions, Evictions: res.Evictions, Unfinished: res.Unfinished,
	}
	if lower > 0 {
		sum.Ratio = round(float64(res.Wall) / float64(lower))
	}
	if tighter := max(bound, workloadAPI); tighter > 0 {
		sum.WorkloadRatio = round(float64(res.Wall) / float64(tighter))
		if lower > 0 {
			sum.FloorRatio = round(float64(tighter) / float64(lower))
		}
	}
	if res.Wall > 0 {
		sum.AdmissionsPerSecond = round(float64(res.Admissions) / res.Wall.Seconds())
	}
	for class, waits := range res.WaitByClass {
		sum.Classes[class] = newStats(waits)
	}
	sum.FinishOverhang = newStats(res.FinishOverhang)
	return sum
}

// SummaryDir is where a config's summary goes: _output/perf/<name>.
func SummaryDir(root, name string) string { return filepath.Join(root, "_output", "perf", name) }

// WriteSummary writes s as indented JSON to dir/summary.json.
func WriteSummary(dir string, s *Summary) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "summary.json")
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadSummary reads a summary.json.
func ReadSummary(path string) (*Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &Summary{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func round(v float64) float64 { return math.Round(v*100) / 100 }
