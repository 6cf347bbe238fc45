package runner

import (
	"cmp"
	"context"
	"encoding/csv"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

// writeTimelines writes workloads.csv and samples.csv to dir.
func writeTimelines(ctx context.Context, dir string, rec *recorder, samples []sample) {
	if err := writeCSV(filepath.Join(dir, "workloads.csv"), rec.writeTimeline); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Writing the workloads' timeline")
	}
	if err := writeCSV(filepath.Join(dir, "samples.csv"), func(w io.Writer) error { return writeSamples(w, samples) }); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Writing the run's samples")
	}
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

// writeTimeline writes one CSV line per workload, in order of creation:
// when it was created, first admitted, last admitted and finished, in
// milliseconds since the start (empty if it never was), and how often it
// was evicted. It is for reading a run after the fact: which workloads
// waited, and when.
func (r *recorder) writeTimeline(w io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := slices.Collect(maps.Values(r.records))
	slices.SortFunc(recs, func(a, b *record) int {
		if c := cmp.Compare(a.created, b.created); c != 0 {
			return c
		}
		return cmpKey(a.planned, b.planned)
	})
	out := csv.NewWriter(w)
	_ = out.Write([]string{"namespace", "name", "class", "cohort", "priority", "requestMilli", "runtimeMs",
		"createdMs", "firstAdmittedMs", "admittedMs", "finishedMs", "evictions"})
	for _, rec := range recs {
		p, admitted := rec.planned, rec.everAdmitted()
		_ = out.Write([]string{p.Namespace, p.Name, p.Class, p.Cohort, strconv.Itoa(int(p.Priority)), strconv.FormatInt(p.RequestMilli, 10),
			millis(p.Runtime, true), millis(rec.created, true), millis(rec.firstAdmittedAt, admitted), millis(rec.admittedAt, admitted),
			millis(rec.finishedAt, rec.finished), strconv.Itoa(rec.evictionCount())})
	}
	out.Flush()
	return out.Error()
}

func cmpKey(a, b *scenario.Planned) int {
	if a.Namespace != b.Namespace {
		return strings.Compare(a.Namespace, b.Namespace)
	}
	return strings.Compare(a.Name, b.Name)
}

// millis is d in whole milliseconds, or empty when not known.
func millis(d time.Duration, known bool) string {
	if !known {
		return ""
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// sample is a run's state at one moment: the workloads by state and the
// CPU time each process has used so far.
type sample struct {
	At     time.Duration
	Counts counts
	CPU    map[string]float64
}

// sampleProcesses are the processes a samples file has a column for, in
// order.
var sampleProcesses = []string{"kube-apiserver", "etcd", "berth", "runner"}

// writeSamples writes one CSV line per interval between two samples: its
// end in milliseconds since the start, the workloads created, admitted
// and finished in it, those running at its end, and the cores each process
// used on average over it. It shows the phases of a run: when the quota
// was the limit, and when the API server had no core left.
func writeSamples(w io.Writer, samples []sample) error {
	out := csv.NewWriter(w)
	header := []string{"elapsedMs", "created", "admitted", "finished", "running"}
	for _, p := range sampleProcesses {
		header = append(header, p+"Cores")
	}
	_ = out.Write(header)
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		line := []string{
			strconv.FormatInt(b.At.Milliseconds(), 10),
			strconv.Itoa(b.Counts.Created - a.Counts.Created),
			strconv.Itoa(b.Counts.Admitted - a.Counts.Admitted),
			strconv.Itoa(b.Counts.Finished - a.Counts.Finished),
			strconv.Itoa(b.Counts.Running),
		}
		secs := (b.At - a.At).Seconds()
		for _, p := range sampleProcesses {
			before, ok1 := a.CPU[p]
			after, ok2 := b.CPU[p]
			if !ok1 || !ok2 || secs <= 0 {
				line = append(line, "")
				continue
			}
			line = append(line, strconv.FormatFloat((after-before)/secs, 'f', 2, 64))
		}
		_ = out.Write(line)
	}
	out.Flush()
	return out.Error()
}
