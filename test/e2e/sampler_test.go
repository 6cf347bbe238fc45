package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// gpuSampler samples, every second, the GPUs that the pods of a namespace
// hold on nodes: every pod bound to a node that has not succeeded or
// failed, terminating ones included. It checks quota from what actually
// runs, not from Berth's own books.
type gpuSampler struct {
	mu      sync.Mutex
	max     int
	samples int
	worst   string
}

// sampleGPUs starts sampling e's namespace until the test ends, and fails
// the test then if any sample held more than limit GPUs.
func (e *env) sampleGPUs(limit int) *gpuSampler {
	s := &gpuSampler{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			s.sample(ctx, e.ns)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	e.t.Cleanup(func() {
		cancel()
		<-done
		if s.max > limit {
			e.t.Errorf("the pods of %s held %d GPUs at once, over the quota of %d (%d samples): %s", e.ns, s.max, limit, s.samples, s.worst)
		} else {
			e.t.Logf("GPUs held at once by the pods of %s: at most %d of a quota of %d, over %d samples", e.ns, s.max, limit, s.samples)
		}
	})
	return s
}

func (s *gpuSampler) sample(ctx context.Context, ns string) {
	out, err := kubectl(ctx, "", "get", "pods", "-n", ns, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase} {.spec.containers[0].resources.requests.nvidia\.com/gpu}{"\n"}{end}`)
	if err != nil {
		return
	}
	held := 0
	var holders []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[2] == "Succeeded" || f[2] == "Failed" {
			continue
		}
		gpus, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		held += gpus
		holders = append(holders, f[0]+"="+f[3])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	if held > s.max {
		s.max, s.worst = held, strings.Join(holders, " ")
	}
}

// peak is the most GPUs held at once so far.
func (s *gpuSampler) peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}
