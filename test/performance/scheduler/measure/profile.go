package measure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"
)

// profileChunk is how long each CPU profile a run asks for lasts. Go
// profiles CPU for a duration fixed up front, and a run's length is not
// known when it starts, so a run is profiled in consecutive chunks; when
// the scenario ends, the chunk under way still completes.
const profileChunk = 5 * time.Second

// The processes StartProfiles profiles, by the names their profiles'
// files start with.
const (
	ControllerProfile = "controller"
	APIServerProfile  = "kube-apiserver"
)

// CPUProfileFile is the file of process's CPU profile in a run's output.
func CPUProfileFile(process string) string { return process + ".cpu.pprof" }

// HeapProfileFile is the file of process's heap profile in a run's output.
func HeapProfileFile(process string) string { return process + ".heap.pprof" }

// StartProfiles starts profiling the CPU of the controller, which serves
// Go's pprof endpoints under controllerPprof (http://127.0.0.1:8082), and
// of the API server cfg reaches, until ctx ends or the returned function
// is called. That function waits for the profiles under way, takes both
// heap profiles and writes them all to dir.
func StartProfiles(ctx context.Context, cfg *rest.Config, controllerPprof, dir string) (func() error, error) {
	// The API server serves pprof to its admin, over TLS.
	apiClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	endpoints := map[string]pprofEndpoint{
		ControllerProfile: {http.DefaultClient, controllerPprof},
		APIServerProfile:  {apiClient, strings.TrimSuffix(cfg.Host, "/")},
	}
	ctx, stop := context.WithCancel(ctx)
	cpu := make(chan error, len(endpoints))
	for name, e := range endpoints {
		go func() { cpu <- named(name, e.profileCPU(ctx, profileChunk, filepath.Join(dir, CPUProfileFile(name)))) }()
	}
	return func() error {
		stop()
		var errs []error
		for range endpoints {
			errs = append(errs, <-cpu)
		}
		for name, e := range endpoints {
			errs = append(errs, named(name, e.profileHeap(context.WithoutCancel(ctx), filepath.Join(dir, HeapProfileFile(name)))))
		}
		return errors.Join(errs...)
	}, nil
}

// named prefixes err, if any, with the process it is about.
func named(process string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", process, err)
}

// pprofEndpoint is where a process serves Go's pprof endpoints: base is
// the URL they are under, e.g. http://127.0.0.1:8082.
type pprofEndpoint struct {
	client *http.Client
	base   string
}

// profileCPU profiles the CPU of the process from now until ctx ends, in
// consecutive profiles of chunk each, and writes them merged to path, for
// `go tool pprof`. The chunk under way when ctx ends completes, so the
// profile covers all of the time until then.
func (e pprofEndpoint) profileCPU(ctx context.Context, chunk time.Duration, path string) error {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", e.base, max(int(chunk.Seconds()), 1))
	var parts []*profile.Profile
	for len(parts) == 0 || ctx.Err() == nil {
		// Not bound to ctx: a cancelled request would end the chunk
		// without a profile. The bound only guards against a hung server.
		fetchCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chunk+30*time.Second)
		p, err := get(fetchCtx, e.client, url, profile.Parse)
		cancel()
		if err != nil {
			return fmt.Errorf("profiling the CPU (%d profiles taken): %w", len(parts), err)
		}
		parts = append(parts, p)
	}
	merged, err := profile.Merge(parts)
	if err != nil {
		return fmt.Errorf("merging %d CPU profiles: %w", len(parts), err)
	}
	return writeProfile(path, merged)
}

// profileHeap writes the heap profile of the process to path: the memory
// in use now, and what was allocated since the process started (go tool
// pprof -sample_index=alloc_space).
func (e pprofEndpoint) profileHeap(ctx context.Context, path string) error {
	p, err := get(ctx, e.client, e.base+"/debug/pprof/heap", profile.Parse)
	if err != nil {
		return fmt.Errorf("profiling the heap: %w", err)
	}
	return writeProfile(path, p)
}

func writeProfile(path string, p *profile.Profile) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(p.Write(f), f.Close())
}

// ReadProfile parses the profile at path.
func ReadProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return p, nil
}

// Sampled reports whether a sample of p has in its stack a function whose
// name match accepts.
func Sampled(p *profile.Profile, match func(function string) bool) bool {
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil && match(line.Function.Name) {
					return true
				}
			}
		}
	}
	return false
}
