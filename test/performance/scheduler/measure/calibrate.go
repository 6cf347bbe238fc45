package measure

import (
	"context"
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
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
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
// patch each), then Workloads (create, admit, finish). c creates the
// Workloads and w writes their status as the runner does, with Berth's
// status PUTs. The objects are deleted afterwards.
func Calibrate(ctx context.Context, cfg *rest.Config, c client.Client, w workloadwriter.Writer, workers int, d time.Duration) (Calibration, error) {
	cs, err := kubernetes.NewForConfig(Unlimited(cfg))
	if err != nil {
		return Calibration{}, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: calibrationNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return Calibration{}, fmt.Errorf("creating the calibration namespace: %w", err)
	}
	var out Calibration
	if out.WritesPerSecond, err = configMapRate(ctx, cs.CoreV1().ConfigMaps(calibrationNamespace), workers, d); err != nil {
		return Calibration{}, err
	}
	admitter, err := newAdmitter(cfg, c)
	if err != nil {
		return Calibration{}, err
	}
	if out.WorkloadWritesPerSecond, err = workloadRate(ctx, c, admitter, w, workers, d); err != nil {
		return Calibration{}, err
	}
	return out, nil
}

// configMapRate is the rate of ConfigMap writes in cms, a create and a
// merge patch of each; it deletes the ConfigMaps afterwards.
func configMapRate(ctx context.Context, cms corev1client.ConfigMapInterface, workers int, d time.Duration) (float64, error) {
	rate, err := writeRate(ctx, workers, d, "ConfigMap", func(name string) []func() error {
		return []func() error{
			func() error {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}
				_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
				return err
			},
			func() error {
				_, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"v":"1"}}`), metav1.PatchOptions{})
				return err
			},
		}
	})
	if err != nil {
		return 0, err
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return 0, fmt.Errorf("deleting the calibration objects: %w", err)
	}
	return rate, nil
}

// newAdmitter is the writer of the calibration's admissions: a client of
// its own, and so in a field manager of its own, as the controller's are.
func newAdmitter(cfg *rest.Config, c client.Client) (workloadwriter.Writer, error) {
	admitterCfg := Unlimited(cfg)
	admitterCfg.UserAgent = "berth-perf-calibration-admission"
	admitterHTTP, err := rest.HTTPClientFor(admitterCfg)
	if err != nil {
		return nil, err
	}
	return workloadwriter.New(admitterCfg, admitterHTTP, c.Scheme())
}

// workloadRate is the rate of the scenario's three writes, on the objects
// of the scenario and as the run makes them: the runner's create (c); an
// admission as Berth writes it, a status PUT (admitter); and the runner's
// Finished (w). A cheaper form of these writes would make the bound one
// that the run could beat. It deletes the Workloads afterwards.
func workloadRate(ctx context.Context, c client.Client, admitter, w workloadwriter.Writer, workers int, d time.Duration) (float64, error) {
	rate, err := writeRate(ctx, workers, d, "Workload", func(name string) []func() error {
		p := &scenario.Planned{Name: name, Namespace: calibrationNamespace, Class: "calibration", Priority: 1, RequestMilli: 1000}
		wl := p.Workload()
		return []func() error{
			func() error { return c.Create(ctx, wl) },
			func() (err error) {
				wl, err = workloadwriter.Apply(ctx, admitter, wl, workload.Admit(calibrationAdmission()))
				return err
			},
			func() error {
				_, err := workloadwriter.Apply(ctx, w, wl, workload.Finish("Succeeded", "The calibration's job ran"))
				return err
			},
		}
	})
	if err != nil {
		return 0, err
	}
	if err := c.DeleteAllOf(ctx, &berthv1alpha1.Workload{}, client.InNamespace(calibrationNamespace)); err != nil {
		return 0, fmt.Errorf("deleting the calibration workloads: %w", err)
	}
	return rate, nil
}

// writeRate runs workers loops of the writes of cycle, in order, each
// cycle on a fresh name, for d, and returns the writes a second that
// succeeded. Every write must succeed: the names are fresh and nothing
// else writes them, so a failure is a broken cycle, whose rate would mean
// nothing.
func writeRate(ctx context.Context, workers int, d time.Duration, kind string, cycle func(name string) []func() error) (float64, error) {
	var done atomic.Int64
	var failed atomic.Pointer[error]
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil && failed.Load() == nil; i++ {
				name := fmt.Sprintf("%s-w%d-%d", strings.ToLower(kind), w, i)
				for step, write := range cycle(name) {
					if err := write(); err != nil {
						err = fmt.Errorf("calibration: write %d of %s %s: %w", step+1, kind, name, err)
						failed.CompareAndSwap(nil, &err)
						return
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
	if err := failed.Load(); err != nil {
		return 0, *err
	}
	return float64(done.Load()) / elapsed.Seconds(), nil
}

// Unlimited is cfg without a client-side rate limit: the benchmark's own
// clients must never be the bottleneck.
func Unlimited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return cfg
}

// calibrationAdmission is the admission of a calibration workload: the
// assignment of its podset, as in the scenario.
func calibrationAdmission() *berthv1alpha1.Admission {
	return &berthv1alpha1.Admission{
		ClusterQueue: "calibration",
		PodSetAssignments: []berthv1alpha1.PodSetAssignment{{
			Name:          scenario.PodSetName,
			Flavors:       map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{corev1.ResourceCPU: scenario.FlavorName},
			ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Count:         ptr.To[int32](1),
		}},
	}
}
