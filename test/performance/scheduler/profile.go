package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/google/pprof/profile"
)

// ProfileChunk is how long each CPU profile ProfileCPU asks for lasts. Go
// profiles CPU for a duration fixed up front, and a run's length is not
// known when it starts, so a run is profiled in consecutive chunks; when
// the scenario ends, the chunk under way still completes.
const ProfileChunk = 5 * time.Second

// ProfileCPU profiles the CPU of the process that serves Go's pprof
// endpoints at base (e.g. http://127.0.0.1:8082) from now until ctx ends,
// in consecutive profiles of chunk each, and writes them merged to path,
// for `go tool pprof`. The chunk under way when ctx ends completes, so the
// profile covers all of the time until then.
func ProfileCPU(ctx context.Context, base string, chunk time.Duration, path string) error {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, max(int(chunk.Seconds()), 1))
	var parts []*profile.Profile
	for len(parts) == 0 || ctx.Err() == nil {
		// Not bound to ctx: a cancelled request would end the chunk
		// without a profile. The bound only guards against a hung server.
		fetchCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chunk+30*time.Second)
		p, err := fetchProfile(fetchCtx, url)
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

// ProfileHeap writes the heap profile of the process that serves pprof at
// base to path: the memory in use now, and what was allocated since the
// process started (go tool pprof -sample_index=alloc_space).
func ProfileHeap(ctx context.Context, base, path string) error {
	p, err := fetchProfile(ctx, base+"/debug/pprof/heap")
	if err != nil {
		return fmt.Errorf("profiling the heap: %w", err)
	}
	return writeProfile(path, p)
}

func fetchProfile(ctx context.Context, url string) (*profile.Profile, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, msg)
	}
	return profile.Parse(resp.Body)
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
