package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// calibrationNamespace holds the throwaway objects of Calibrate.
const calibrationNamespace = "perf-calibration"

// Calibrate measures how many writes a second the API server takes on this
// machine: workers clients, with no client-side rate limit, each create a
// ConfigMap and patch it, over and over, for d. The objects are deleted
// afterwards.
func Calibrate(ctx context.Context, cfg *rest.Config, workers int, d time.Duration) (float64, error) {
	cs, err := kubernetes.NewForConfig(unlimited(cfg))
	if err != nil {
		return 0, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: calibrationNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating the calibration namespace: %w", err)
	}
	var writes, failures atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			cms := cs.CoreV1().ConfigMaps(calibrationNamespace)
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-%d", w, i)}, Data: map[string]string{"v": "0"}}
				if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					failures.Add(1)
					continue
				}
				writes.Add(1)
				if _, err := cms.Patch(ctx, cm.Name, types.MergePatchType, []byte(`{"data":{"v":"1"}}`), metav1.PatchOptions{}); err != nil {
					failures.Add(1)
					continue
				}
				writes.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n := failures.Load(); n > 0 && writes.Load() == 0 {
		return 0, fmt.Errorf("calibration: all %d writes failed", n)
	}
	if err := cs.CoreV1().ConfigMaps(calibrationNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return 0, fmt.Errorf("deleting the calibration objects: %w", err)
	}
	return float64(writes.Load()) / elapsed.Seconds(), nil
}

// unlimited is cfg without a client-side rate limit: the benchmark's own
// client must never be the bottleneck.
func unlimited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return cfg
}
