package scheduler

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// Sample is a run's state at one moment: the workloads by state and the
// CPU time each process has used so far.
type Sample struct {
	At     time.Duration
	Counts Counts
	CPU    map[string]float64
}

// sampleProcesses are the processes a samples file has a column for, in
// order.
var sampleProcesses = []string{"kube-apiserver", "etcd", "berth", "runner"}

// WriteSamples writes one CSV line per interval between two samples: its
// end in milliseconds since the start, the workloads created, admitted
// and finished in it, those running at its end, and the cores each process
// used on average over it. It shows the phases of a run: when the quota
// was the limit, and when the API server had no core left.
func WriteSamples(w io.Writer, samples []Sample) error {
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
