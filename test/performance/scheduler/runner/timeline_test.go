package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWriteSamples turns cumulative samples into one line per interval:
// the workloads of the interval and each process's average cores; a
// process missing from either end of an interval has no figure.
func TestWriteSamples(t *testing.T) {
	samples := []sample{
		{CPU: map[string]float64{"kube-apiserver": 10, "etcd": 1, "berth": 2, "runner": 1}},
		{At: 5 * time.Second, Counts: counts{Created: 100, Admitted: 40, Running: 30, Finished: 10},
			CPU: map[string]float64{"kube-apiserver": 18, "etcd": 1.5, "berth": 3, "runner": 1.5}},
		{At: 7 * time.Second, Counts: counts{Created: 100, Admitted: 70, Running: 20, Finished: 50},
			CPU: map[string]float64{"kube-apiserver": 21.4, "etcd": 1.7, "runner": 2}},
	}
	var out strings.Builder
	if err := writeSamples(&out, samples); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"elapsedMs,created,admitted,finished,running,kube-apiserverCores,etcdCores,berthCores,runnerCores",
		"5000,100,40,10,30,1.60,0.10,0.20,0.10",
		"7000,0,30,40,20,1.70,0.10,,0.25",
		"",
	}, "\n")
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}
