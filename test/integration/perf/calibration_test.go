package perf

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/pkg/controller"
	"github.com/berth-dev/berth/test/performance/scheduler"
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
	c, err := controller.NewClient(server.Config, client.Options{Scheme: server.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	before := workloadRequests(ctx, t, server)
	cal, err := scheduler.Calibrate(ctx, server.Config, c, 2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	after := workloadRequests(ctx, t, server)
	delta := func(key string) int64 { return after[key] - before[key] }

	creates, puts := delta("POST"), delta("PUT status")
	if creates == 0 || puts != 2*creates {
		t.Errorf("%d creates and %d status PUTs of Workloads, want two PUTs for each create (all requests: %v)", creates, puts, after)
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

// workloadRequests reads the API server's count of successful Workload
// requests, by verb and subresource ("PUT status").
func workloadRequests(ctx context.Context, t *testing.T, server *apiserver.Server) map[string]int64 {
	t.Helper()
	cs, err := kubernetes.NewForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		l := map[string]string{}
		for pair := range strings.SplitSeq(labels, ",") {
			k, v, _ := strings.Cut(pair, "=")
			l[k] = strings.Trim(v, `"`)
		}
		if l["resource"] != "workloads" || !strings.HasPrefix(l["code"], "2") {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", sc.Text(), err)
		}
		out[strings.TrimSpace(l["verb"]+" "+l["subresource"])] += int64(n)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
