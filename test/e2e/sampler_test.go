package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// gpuSampler samples, every second, the GPUs that the pods of a namespace
// hold on nodes: every pod bound to a node that has not succeeded or
// failed, terminating ones included, with its effective requests
// (sidecars, init containers and resizes counted as Kubernetes counts
// them). It checks quota from what actually
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
	out, err := kubectl(ctx, "", "get", "pods", "-n", ns, "-o", "json")
	if err != nil {
		return
	}
	pods := &corev1.PodList{}
	if err := json.Unmarshal([]byte(out), pods); err != nil {
		return
	}
	held := int64(0)
	var holders []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		// What the pod holds on its node, as Kubernetes counts it.
		gpus := workload.RunningPodRequests(p)["nvidia.com/gpu"]
		if gpus == 0 {
			continue
		}
		held = resources.Add(held, gpus)
		holders = append(holders, fmt.Sprintf("%s=%d", p.Name, gpus))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	if int(held) > s.max {
		s.max, s.worst = int(held), strings.Join(holders, " ")
	}
}

// peak is the most GPUs held at once so far.
func (s *gpuSampler) peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}
