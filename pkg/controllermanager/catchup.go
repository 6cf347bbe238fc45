package controllermanager

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

const (
	// catchUpPoll is how often waitForWorkloads looks at the cache again.
	catchUpPoll = 50 * time.Millisecond
	// catchUpRelist is how often, while it waits, it asks the API server
	// which of the Workloads it waits for still exist.
	catchUpRelist = time.Second
)

// waitForWorkloads returns once the cache holds every Workload write the
// API server had stored when it was called: each Workload that live, a
// reader of the API server itself, lists is in cached at that version or a
// later one. A new leader loads the quota in use from the cache; the lease
// leaves the old leader's last writes seconds to reach it, and this makes
// sure they did, however far behind a busy API server's watch has fallen.
// The list is of metadata only, once per leadership.
func waitForWorkloads(ctx context.Context, live, cached client.Reader) error {
	start := time.Now()
	want, err := liveWorkloads(ctx, live)
	if err != nil {
		return err
	}
	total, listed, relisted, logged := len(want), time.Since(start), time.Now(), time.Now()
	for {
		behind, err := behindIn(ctx, cached, want)
		if err != nil {
			return err
		}
		if len(behind) == 0 {
			ctrl.LoggerFrom(ctx).V(2).Info("The cache holds every Workload write", "workloads", total, "listed", listed, "waited", time.Since(start))
			return nil
		}
		if time.Since(logged) >= 10*time.Second {
			logged = time.Now()
			ctrl.LoggerFrom(ctx).Info("Waiting for the cache to catch up with the API server before the first cycle", "behind", len(behind), "waited", time.Since(start).Round(time.Second))
		}
		// What is behind stays behind until the watch brings it, unless
		// it was deleted meanwhile: then the cache will never have it.
		want = behind
		if time.Since(relisted) >= catchUpRelist {
			relisted = time.Now()
			now, err := liveWorkloads(ctx, live)
			if err != nil {
				return err
			}
			for key := range want {
				if _, ok := now[key]; !ok {
					delete(want, key)
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(catchUpPoll):
		}
	}
}

// liveWorkloads lists the Workloads' metadata from the API server: the
// resourceVersion of each.
func liveWorkloads(ctx context.Context, live client.Reader) (map[types.NamespacedName]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(berthv1alpha1.GroupVersion.WithKind("WorkloadList"))
	if err := live.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing the Workloads the API server holds: %w", err)
	}
	out := make(map[types.NamespacedName]string, len(list.Items))
	for i := range list.Items {
		out[client.ObjectKeyFromObject(&list.Items[i])] = list.Items[i].ResourceVersion
	}
	return out, nil
}

// behindIn returns the Workloads of want that cached holds at an older
// version than want's, or not at all.
func behindIn(ctx context.Context, cached client.Reader, want map[types.NamespacedName]string) (map[types.NamespacedName]string, error) {
	list := &berthv1alpha1.WorkloadList{}
	if err := cached.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	have := make(map[types.NamespacedName]string, len(list.Items))
	for i := range list.Items {
		have[client.ObjectKeyFromObject(&list.Items[i])] = list.Items[i].ResourceVersion
	}
	behind := map[types.NamespacedName]string{}
	for key, rv := range want {
		if got, ok := have[key]; !ok || olderVersion(got, rv) {
			behind[key] = rv
		}
	}
	return behind, nil
}

// olderVersion reports whether resourceVersion a is older than b. The API
// server's resourceVersions are etcd's revisions, which only grow; if
// either is not a number, only equal versions count as caught up.
func olderVersion(a, b string) bool {
	x, errX := strconv.ParseUint(a, 10, 64)
	y, errY := strconv.ParseUint(b, 10, 64)
	if errX != nil || errY != nil {
		return a != b
	}
	return x < y
}
