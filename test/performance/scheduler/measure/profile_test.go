package measure

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// burn keeps a core busy until stop is closed, so that the CPU profiles
// have samples to find.
func burn(stop <-chan struct{}) {
	x := 1
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := range 100_000 {
			x = x*31 + i
		}
	}
}

// pprofServer serves this test process's own pprof endpoints, as the
// controller's pprofBindAddress does.
func pprofServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	p, err := ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfileCPUCoversTheWholeRun(t *testing.T) {
	base := pprofServer(t)
	stop := make(chan struct{})
	defer close(stop)
	go burn(stop)
	path := filepath.Join(t.TempDir(), CPUProfileFile("controller"))
	// The run ends in the middle of the third one-second chunk, which
	// still completes.
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := (pprofEndpoint{http.DefaultClient, base}).profileCPU(ctx, time.Second, path); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	p := readProfile(t, path)
	if d := time.Duration(p.DurationNanos); d < 2900*time.Millisecond || d > took+100*time.Millisecond {
		t.Errorf("the profile covers %s of the %s it took, want three chunks of a second", d, took)
	}
	if !Sampled(p, func(f string) bool { return strings.HasSuffix(f, "measure.burn") }) {
		t.Errorf("no sample of the busy function in %d samples", len(p.Sample))
	}
}

func TestProfileCPUTakesOneChunkWhenTheRunIsOver(t *testing.T) {
	base := pprofServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := filepath.Join(t.TempDir(), CPUProfileFile("controller"))
	if err := (pprofEndpoint{http.DefaultClient, base}).profileCPU(ctx, time.Second, path); err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(readProfile(t, path).DurationNanos); d < 900*time.Millisecond || d > 2*time.Second {
		t.Errorf("the profile covers %s, want one chunk of a second", d)
	}
}

func TestProfileCPUNamesAFailedChunk(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	err := pprofEndpoint{http.DefaultClient, srv.URL}.profileCPU(context.Background(), time.Second, filepath.Join(t.TempDir(), CPUProfileFile("controller")))
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "0 profiles taken") {
		t.Errorf("profileCPU against a server without pprof: %v, want a 404 naming how far it got", err)
	}
}

func TestProfileHeap(t *testing.T) {
	base := pprofServer(t)
	path := filepath.Join(t.TempDir(), HeapProfileFile("controller"))
	if err := (pprofEndpoint{http.DefaultClient, base}).profileHeap(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range readProfile(t, path).SampleType {
		types = append(types, st.Type)
	}
	if got := strings.Join(types, ","); !strings.Contains(got, "alloc_space") || !strings.Contains(got, "inuse_space") {
		t.Errorf("heap profile sample types %s, want alloc_space and inuse_space", got)
	}
}
