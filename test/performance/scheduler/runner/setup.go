package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/test/performance/scheduler/scenario"
)

// createWorkloads creates each workload at its offset from start, with
// workers requests at once.
func createWorkloads(ctx context.Context, c client.Client, s *scenario.Scenario, rec *recorder, start time.Time, workers int) error {
	todo := make(chan *scenario.Planned, 4*workers)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range todo {
				rec.created(p, time.Now())
				if err := c.Create(ctx, p.Workload()); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("creating workload %s/%s: %w", p.Namespace, p.Name, err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range s.Workloads {
		p := &s.Workloads[i]
		if d := time.Until(start.Add(p.Offset)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		todo <- p
	}
	close(todo)
	wg.Wait()
	return errors.Join(errs...)
}

// createQueues creates the flavor, the controller's namespace and, per
// ClusterQueue, its namespace, the ClusterQueue and the LocalQueue.
func createQueues(ctx context.Context, c client.Client, s *scenario.Scenario, workers int) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "berth-system"}},
		&berthv1alpha1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: scenario.FlavorName}},
	}
	for _, q := range s.Queues {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: q.Name}}, q.ClusterQueue(), q.LocalQueue())
	}
	work := make(chan client.Object)
	errCh := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for obj := range work {
				// A LocalQueue's namespace is created just before it;
				// retry while it is not there yet.
				err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
					err := c.Create(ctx, obj)
					return err == nil || apierrors.IsAlreadyExists(err), nil
				})
				if err != nil {
					select {
					case errCh <- fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err):
					default:
					}
				}
			}
		})
	}
	for _, obj := range objs {
		work <- obj
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errCh:
		return err
	default:
		return nil
	}
}

// waitActive waits until the controller reports n ClusterQueues Active:
// it is then the leader and has loaded them.
func waitActive(ctx context.Context, c client.Client, n int) error {
	var active int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cqs := &berthv1alpha1.ClusterQueueList{}
		if err := c.List(ctx, cqs); err != nil {
			return false, nil
		}
		active = 0
		for i := range cqs.Items {
			if meta.IsStatusConditionTrue(cqs.Items[i].Status.Conditions, berthv1alpha1.ConditionActive) {
				active++
			}
		}
		return active == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d ClusterQueues to be active (%d are): %w", n, active, err)
	}
	return nil
}

// dumpStuck writes the current state of a few unfinished workloads to
// stuck.yaml in dir, for looking into a run that did not finish.
func dumpStuck(ctx context.Context, c client.Client, keys []string, dir string) {
	var out []byte
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		wl := &berthv1alpha1.Workload{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, wl); err != nil {
			out = append(out, fmt.Sprintf("# %s: %v\n", key, err)...)
			continue
		}
		wl.ManagedFields = nil
		data, _ := yaml.Marshal(wl)
		out = append(out, "---\n"...)
		out = append(out, data...)
	}
	_ = os.WriteFile(filepath.Join(dir, "stuck.yaml"), out, 0o644)
}
