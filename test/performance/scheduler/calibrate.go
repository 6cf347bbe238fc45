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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
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
	// WorkloadWritesPerSecond is for Workloads: the three writes every
	// queueing system makes for each workload of the scenario (create,
	// admit, finish), on objects of the scenario's shape.
	WorkloadWritesPerSecond float64
}

// Calibrate measures how many writes a second the API server takes on this
// machine: workers clients, with no client-side rate limit, each write
// fresh objects over and over for d; first ConfigMaps (a create and a
// patch each), then Workloads (create, admit, finish). The objects are
// deleted afterwards.
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
	// The three writes of the scenario, on the objects of the scenario:
	// the runner's create, an admission as a queueing system writes it (in
	// a field manager of its own, as the controller has), and the runner's
	// Finished condition.
	admitPatch := admissionPatch()
	admitter := client.WithFieldOwner(c, "calibration-admission")
	out.WorkloadWritesPerSecond, err = writeRate(ctx, workers, d, "Workload",
		func(name string) error {
			return c.Create(ctx, Workload(&Planned{Name: name, Namespace: calibrationNamespace, Class: "calibration", Priority: 1, RequestMilli: 1000}))
		},
		func(name string) error {
			return admitter.Status().Patch(ctx, workloadMeta(calibrationNamespace, name), client.RawPatch(types.MergePatchType, admitPatch))
		},
		func(name string) error {
			return c.Status().Patch(ctx, workloadMeta(calibrationNamespace, name), client.RawPatch(types.JSONPatchType, finishPatch()))
		})
	if err != nil {
		return Calibration{}, err
	}
	if err := c.DeleteAllOf(ctx, &berthv1alpha1.Workload{}, client.InNamespace(calibrationNamespace)); err != nil {
		return Calibration{}, fmt.Errorf("deleting the calibration workloads: %w", err)
	}
	return out, nil
}

// writeRate runs workers loops of writes, in order, on fresh names for d
// and returns the writes a second that succeeded.
func writeRate(ctx context.Context, workers int, d time.Duration, kind string, writes ...func(name string) error) (float64, error) {
	var done, failures atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				name := fmt.Sprintf("%s-w%d-%d", strings.ToLower(kind), w, i)
				for _, write := range writes {
					if err := write(name); err != nil {
						failures.Add(1)
						break
					}
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n := failures.Load(); n > 0 && done.Load() == 0 {
		return 0, fmt.Errorf("calibration: all %d %s writes failed", n, kind)
	}
	return float64(done.Load()) / elapsed.Seconds(), nil
}

// unlimited is cfg without a client-side rate limit: the benchmark's own
// client must never be the bottleneck.
func unlimited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return cfg
}

// admissionPatch is the status an admission of a calibration workload
// writes: the assignment of its podset and the QuotaReserved and Admitted
// conditions, as in the scenario.
func admissionPatch() []byte {
	now := metav1.Now()
	status := berthv1alpha1.WorkloadStatus{
		Admission: &berthv1alpha1.Admission{
			ClusterQueue: "calibration",
			PodSetAssignments: []berthv1alpha1.PodSetAssignment{{
				Name:          PodSetName,
				Flavors:       map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{corev1.ResourceCPU: FlavorName},
				ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Count:         ptr.To[int32](1),
			}},
		},
		Conditions: []metav1.Condition{
			{Type: berthv1alpha1.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonQuotaReserved,
				Message: "Quota reserved in ClusterQueue calibration", ObservedGeneration: 1, LastTransitionTime: now},
			{Type: berthv1alpha1.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonAdmitted,
				Message: "Admitted by ClusterQueue calibration", ObservedGeneration: 1, LastTransitionTime: now},
		},
	}
	patch, _ := json.Marshal(map[string]any{"status": status})
	return patch
}
