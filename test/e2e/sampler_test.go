package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
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
	limit   int
	samples int
	worst   string
	// books is what the Workloads said when a sample first went over the
	// limit: whether Berth admitted too much, or pods outlived their
	// admission.
	books string
}

// sampleGPUs starts sampling e's namespace until the test ends, and fails
// the test then if any sample held more than limit GPUs.
func (e *env) sampleGPUs(limit int) *gpuSampler {
	s := &gpuSampler{limit: limit}
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
			e.t.Errorf("the pods of %s held %d GPUs at once, over the quota of %d (%d samples): %s\n%s", e.ns, s.max, limit, s.samples, s.worst, s.books)
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
	byWorkload := map[string][]string{}
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
		wl := p.Labels[berthv1alpha1.WorkloadLabel]
		byWorkload[wl] = append(byWorkload[wl], fmt.Sprintf("%s (%s, started %s, deleted %v)", p.Name, p.Status.Phase, p.Status.StartTime, p.DeletionTimestamp))
	}
	s.mu.Lock()
	first := int(held) > s.limit && s.books == ""
	if int(held) > s.max {
		s.max, s.worst = int(held), strings.Join(holders, " ")
	}
	s.samples++
	s.mu.Unlock()
	if first {
		books := booksOf(ctx, ns, byWorkload)
		s.mu.Lock()
		s.books = books
		s.mu.Unlock()
	}
}

// booksOf tells, for each Workload whose pods hold GPUs, whether it holds
// quota, and since when its conditions say what they say.
func booksOf(ctx context.Context, ns string, pods map[string][]string) string {
	out, err := kubectl(ctx, "", "get", "workloads", "-n", ns, "-o", "json")
	if err != nil {
		return "reading the Workloads: " + err.Error()
	}
	list := &berthv1alpha1.WorkloadList{}
	if err := json.Unmarshal([]byte(out), list); err != nil {
		return "reading the Workloads: " + err.Error()
	}
	holding := 0
	byName := map[string]*berthv1alpha1.Workload{}
	for i := range list.Items {
		wl := &list.Items[i]
		byName[wl.Name] = wl
		if workload.HasQuotaReservation(wl) && !workload.IsFinished(wl) {
			holding++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Berth's books a moment later: %d Workloads hold quota\n", holding)
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		fmt.Fprintf(&b, "  workload %q, pods %s:", name, strings.Join(pods[name], ", "))
		if wl := byName[name]; wl != nil {
			for _, c := range wl.Status.Conditions {
				fmt.Fprintf(&b, " %s=%s(%s at %s)", c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339))
			}
		} else {
			b.WriteString(" no such Workload")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// peak is the most GPUs held at once so far.
func (s *gpuSampler) peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}
