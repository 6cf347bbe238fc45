package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// calibrationNamespace holds the throwaway objects of Calibrate.
const calibrationNamespace = "perf-calibration"

// Calibration is what the calibration measured: how many writes a second
// the API server takes on this machine.
type Calibration struct {
	// WritesPerSecond is for ConfigMaps: the cheapest writes there are.
	WritesPerSecond float64
	// WorkloadWritesPerSecond is for Workloads: creating one of the
	// scenario's shape and writing a condition to its status, the writes
	// every queueing system must make for each workload.
	WorkloadWritesPerSecond float64
}

// Calibrate measures how many writes a second the API server takes on this
// machine: workers clients, with no client-side rate limit, each create an
// object and patch it, over and over, for d; first ConfigMaps, then
// Workloads. The objects are deleted afterwards.
func Calibrate(ctx context.Context, cfg *rest.Config, c client.Client, workers int, d time.Duration) (Calibration, error) {
	cs, err := kubernetes.NewForConfig(unlimited(cfg))
	if err != nil {
		return Calibration{}, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: calibrationNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return Calibration{}, fmt.Errorf("creating the calibration namespace: %w", err)
	}
	cms := cs.CoreV1().ConfigMaps(calibrationNamespace)
	var out Calibration
	out.WritesPerSecond, err = writeRate(ctx, workers, d, "ConfigMap", func(name string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}
		_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}, func(name string) error {
		_, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"v":"1"}}`), metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return Calibration{}, err
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return Calibration{}, fmt.Errorf("deleting the calibration objects: %w", err)
	}
	cond, _ := json.Marshal(metav1.Condition{
		Type: berthv1alpha1.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonQuotaReserved,
		Message: "Calibration", LastTransitionTime: metav1.Now(),
	})
	condPatch := []byte(`{"status":{"conditions":[` + string(cond) + `]}}`)
	out.WorkloadWritesPerSecond, err = writeRate(ctx, workers, d, "Workload", func(name string) error {
		return c.Create(ctx, Workload(&Planned{Name: name, Namespace: calibrationNamespace, Class: "calibration", Priority: 1, RequestMilli: 1000}))
	}, func(name string) error {
		wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: calibrationNamespace}}
		return c.Status().Patch(ctx, wl, client.RawPatch(types.MergePatchType, condPatch))
	})
	if err != nil {
		return Calibration{}, err
	}
	if err := c.DeleteAllOf(ctx, &berthv1alpha1.Workload{}, client.InNamespace(calibrationNamespace)); err != nil {
		return Calibration{}, fmt.Errorf("deleting the calibration workloads: %w", err)
	}
	return out, nil
}

// writeRate runs workers loops of create then patch of fresh names for d
// and returns the writes a second that succeeded.
func writeRate(ctx context.Context, workers int, d time.Duration, kind string, create, patch func(name string) error) (float64, error) {
	var writes, failures atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				name := fmt.Sprintf("%s-w%d-%d", strings.ToLower(kind), w, i)
				for _, write := range []func(string) error{create, patch} {
					if err := write(name); err != nil {
						failures.Add(1)
						break
					}
					writes.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n := failures.Load(); n > 0 && writes.Load() == 0 {
		return 0, fmt.Errorf("calibration: all %d %s writes failed", n, kind)
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
