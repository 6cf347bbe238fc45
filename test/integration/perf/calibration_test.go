package perf

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth-dev/berth/pkg/workloadwriter"
	"github.com/berth-dev/berth/test/performance/scheduler/measure"
	"github.com/berth-dev/berth/test/util/apiserver"
)

// TestCalibrationWritesAsTheRunDoes checks that the calibration times the
// Workload writes the run makes, so that the run cannot beat the bound
// made from it: per workload a create, then two status PUTs (Berth's
// admission and the runner's Finished), and no patch, which costs the
// API server more.
func TestCalibrationWritesAsTheRunDoes(t *testing.T) {
	server, err := apiserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	httpClient, err := rest.HTTPClientFor(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workloadwriter.New(server.Config, httpClient, server.Client.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	before := workloadRequests(ctx, t, server)
	cal, err := measure.Calibrate(ctx, server.Config, server.Client, w, 2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	after := workloadRequests(ctx, t, server)
	delta := func(key string) int64 { return after[key] - before[key] }

	creates, puts := delta("POST"), delta("PUT status")
	if creates == 0 || puts != 2*creates {
		t.Errorf("%d creates and %d status PUTs of Workloads, want two PUTs for each create (all writes: %v)", creates, puts, after)
	}
	for _, key := range []string{"PATCH", "PATCH status", "PUT"} {
		if n := delta(key); n != 0 {
			t.Errorf("%d Workload requests %q, want none", n, key)
		}
	}
	if cal.WritesPerSecond <= 0 || cal.WorkloadWritesPerSecond <= 0 {
		t.Errorf("calibration %+v, want both rates measured", cal)
	}
}

// workloadRequests reads the API server's count of the Workload writes it
// stored, by verb and subresource ("PUT status").
func workloadRequests(ctx context.Context, t *testing.T, server *apiserver.Server) map[string]int64 {
	t.Helper()
	cs, err := kubernetes.NewForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := measure.ReadAPIServer(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	return counts.WritesByRequest
}
