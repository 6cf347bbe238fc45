package api

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/fastwatch"
	"github.com/berth-dev/berth/pkg/metrics"
)

// TestWorkloadInformerWatchesInOnePass runs an informer built by
// fastwatch against the API server: it must see a Workload created, its
// status changed and the Workload deleted, without client-go's watch, and
// with the managed fields left out of the events as the API server writes
// them.
func TestWorkloadInformerWatchesInOnePass(t *testing.T) {
	ctx := testContext(t)
	httpClient, err := rest.HTTPClientFor(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	newInformer, err := fastwatch.NewInformer(server.Config, httpClient, server.Client.Scheme(),
		fastwatch.For[berthv1alpha1.Workload]("workloads").WithoutManagedFields())
	if err != nil {
		t.Fatal(err)
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &berthv1alpha1.WorkloadList{}
			return list, server.Client.List(ctx, list, &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			t.Error("the informer used client-go's watch")
			return nil, errors.New("not this watch")
		},
	}
	observer := &watchObserver{ListWatch: lw}
	inf := newInformer(observer, &berthv1alpha1.Workload{}, 0, toolscache.Indexers{})
	seen := make(chan string, 16)
	note := func(what string, obj any) {
		if wl, ok := obj.(*berthv1alpha1.Workload); ok && wl.Name == "fastwatch" {
			if wl.Status.Admission != nil {
				what += " admitted"
			}
			if wl.Kind != "" {
				t.Errorf("%s: kind %q set; typed objects of the cache have none", what, wl.Kind)
			}
			if len(wl.ManagedFields) > 0 {
				t.Errorf("%s: the event kept %d managed fields entries", what, len(wl.ManagedFields))
			}
			if wl.Spec.QueueName != "main" || len(wl.Spec.PodSets) != 1 {
				t.Errorf("%s: spec %+v, want what was created", what, wl.Spec)
			}
			seen <- what
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { note("added", obj) },
		UpdateFunc: func(_, obj any) { note("updated", obj) },
		DeleteFunc: func(obj any) { note("deleted", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	started := testutil.ToFloat64(metrics.WatchesStarted.WithLabelValues("workloads"))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go inf.RunWithContext(runCtx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if n := testutil.ToFloat64(metrics.WatchesStarted.WithLabelValues("workloads")) - started; n < 1 {
		t.Errorf("berth_watches_started_total{resource=\"workloads\"} went up by %v, want the informer's watch counted", n)
	}
	// Client-go lists by streaming the list as a watch (its default since
	// 1.35); the observer must hear of it, or a relist goes unnoticed.
	if o := observer.watches.Load(); o < 1 || observer.lists.Load() != 1 {
		t.Errorf("the observer heard of %d watches, %d of them lists; want the informer's list streamed as a watch", o, observer.lists.Load())
	}

	u := object(t, "apiVersion: berth.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: fastwatch\n  namespace: default\nspec:\n  queueName: main\n  podSets:\n"+podSet("main", 1, ""))
	if err := create(ctx, t, u); err != nil {
		t.Fatal(err)
	}
	expect(t, seen, "added")
	wl := &berthv1alpha1.Workload{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(u), wl); err != nil {
		t.Fatal(err)
	}
	orig := wl.DeepCopy()
	wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "team-a", PodSetAssignments: []berthv1alpha1.PodSetAssignment{{Name: "main", Count: ptr.To[int32](1)}}}
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{
		Type: berthv1alpha1.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonQuotaReserved, Message: "Quota reserved in ClusterQueue team-a",
	})
	if err := server.Client.Status().Patch(ctx, wl, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	expect(t, seen, "updated admitted")
	if err := server.Client.Delete(ctx, wl); err != nil {
		t.Fatal(err)
	}
	expect(t, seen, "deleted admitted")
}

func expect(t *testing.T, seen <-chan string, want string) {
	t.Helper()
	select {
	case got := <-seen:
		if got != want {
			t.Fatalf("the informer saw %q, want %q", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the informer did not see %q within 20s", want)
	}
}

// watchObserver counts the watches fastwatch opens, and those that stream
// a list.
type watchObserver struct {
	*toolscache.ListWatch
	watches, lists atomic.Int32
}

func (o *watchObserver) WatchOpening(opts metav1.ListOptions) {
	o.watches.Add(1)
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		o.lists.Add(1)
	}
}
