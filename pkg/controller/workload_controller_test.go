package controller

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// forgetNothing stands for the writer of why workloads wait, which the
// reconciler only tells what to forget.
type forgetNothing struct{}

func (forgetNothing) Forget(types.NamespacedName) {}

// TestWorkloadReconcilerLeavesTheCachedObjectAlone: the reconciler reads
// Workloads from the informer cache without a copy, so every path that
// writes must change a copy. Here Get hands out the stored objects
// themselves, as the cache does then, and each must be unchanged after
// its reconcile wrote.
func TestWorkloadReconcilerLeavesTheCachedObjectAlone(t *testing.T) {
	admitted := func(name string) *utiltesting.WorkloadWrapper {
		return utiltesting.MakeWorkload(name, "ns").Queue("main").Request(1, "cpu", "1").
			Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, 0).
			AdmittedIn("cq", "default")
	}
	// Conditions already there: a write that changes one in place shares
	// its slice with the cache.
	waiting := berthv1alpha1.WorkloadQuotaReserved
	noQueue := utiltesting.MakeWorkload("no-queue", "ns").Queue("missing").Request(1, "cpu", "1").
		Condition(waiting, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
	deactivated := utiltesting.MakeWorkload("deactivated", "ns").Queue("main").Request(1, "cpu", "1").
		Condition(waiting, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
	deactivated.Spec.Active = ptr.To(false)
	withClass := utiltesting.MakeWorkload("with-class", "ns").Queue("main").Request(1, "cpu", "1").Obj()
	withClass.Spec.PriorityClassName = "high"
	stopping := admitted("stopping").Obj()
	stopping.Spec.Active = ptr.To(false)
	evicted := admitted("evicted").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 0).Obj()
	stored := []*berthv1alpha1.Workload{noQueue, deactivated, withClass, stopping, evicted}

	scheme := runtime.NewScheme()
	if err := errors.Join(berthv1alpha1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		utiltesting.MakeLocalQueue("main", "ns", "cq"), utiltesting.MakeClusterQueue("cq").Obj(),
		utiltesting.MakeWorkloadPriorityClass("high", 1000),
	}
	for _, wl := range stored {
		objs = append(objs, wl)
	}
	stores := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&berthv1alpha1.Workload{}).Build()
	// The cache's objects: as stored, with their resourceVersions.
	shared := map[client.ObjectKey]*berthv1alpha1.Workload{}
	for i, wl := range stored {
		got := &berthv1alpha1.Workload{}
		if err := stores.Get(context.Background(), client.ObjectKeyFromObject(wl), got); err != nil {
			t.Fatal(err)
		}
		stored[i], shared[client.ObjectKeyFromObject(wl)] = got, got
	}
	c := interceptor.NewClient(stores, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if wl, ok := shared[key]; ok {
			if _, isWl := obj.(*berthv1alpha1.Workload); isWl {
				// What the cache does with UnsafeDisableDeepCopy.
				reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(wl).Elem())
				return nil
			}
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	recorder := events.NewFakeRecorder(100)
	r := &WorkloadReconciler{client: c, writer: workloadwriter.NewUpdate(c), cache: cache.New(), queues: queue.NewManager(),
		pending: forgetNothing{}, recorder: recorder, status: NewStatusNotifier()}

	for _, wl := range stored {
		before := wl.DeepCopy()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wl)}); err != nil {
			t.Fatalf("%s: %v", wl.Name, err)
		}
		if diff := cmp.Diff(before, wl); diff != "" {
			t.Errorf("reconciling %s changed the cached object (-before +after):\n%s", wl.Name, diff)
		}
	}
	// The paths ran: each wrote what it should have.
	inadmissible := func(wl *berthv1alpha1.Workload) bool {
		c := workload.FindCondition(wl, waiting)
		return c != nil && c.Reason == berthv1alpha1.ReasonInadmissible
	}
	for name, check := range map[string]func(*berthv1alpha1.Workload) bool{
		"no-queue":    inadmissible,
		"deactivated": inadmissible,
		"with-class":  func(wl *berthv1alpha1.Workload) bool { return ptr.Deref(wl.Spec.Priority, 0) == 1000 },
		"stopping":    workload.IsEvicted,
		"evicted":     func(wl *berthv1alpha1.Workload) bool { return wl.Status.Admission == nil },
	} {
		got := &berthv1alpha1.Workload{}
		if err := stores.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, got); err != nil {
			t.Fatal(err)
		}
		if !check(got) {
			t.Errorf("%s: the reconciler did not write what it should have", name)
		}
	}
}

// forgotten records the workloads the reconciler tells the writer of
// reasons to wait to forget.
type forgotten map[types.NamespacedName]bool

func (f forgotten) Forget(key types.NamespacedName) { f[key] = true }

// TestInadmissibleWorkloadIsForgottenByWaitReasons: a workload that
// cannot be queued at all (its LocalQueue or WorkloadPriorityClass is
// missing) gets its reason from the reconciler, over whatever the writer of
// reasons to wait wrote before. That writer must forget its own write, or
// once the workload is queued again its next reason would wait for the
// refresh of the one it thinks is still there.
func TestInadmissibleWorkloadIsForgottenByWaitReasons(t *testing.T) {
	noQueue := utiltesting.MakeWorkload("no-queue", "ns").Queue("missing").Request(1, "cpu", "1").Obj()
	noClass := utiltesting.MakeWorkload("no-class", "ns").Queue("main").Request(1, "cpu", "1").Obj()
	noClass.Spec.PriorityClassName = "gone"
	scheme := runtime.NewScheme()
	if err := errors.Join(berthv1alpha1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(noQueue, noClass, utiltesting.MakeLocalQueue("main", "ns", "cq"), utiltesting.MakeClusterQueue("cq").Obj()).
		WithStatusSubresource(&berthv1alpha1.Workload{}).Build()
	f := forgotten{}
	r := &WorkloadReconciler{client: c, writer: workloadwriter.NewUpdate(c), cache: cache.New(), queues: queue.NewManager(),
		pending: f, recorder: events.NewFakeRecorder(100), status: NewStatusNotifier()}
	for _, wl := range []*berthv1alpha1.Workload{noQueue, noClass} {
		key := client.ObjectKeyFromObject(wl)
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("%s: %v", wl.Name, err)
		}
		got := &berthv1alpha1.Workload{}
		if err := c.Get(context.Background(), key, got); err != nil {
			t.Fatal(err)
		}
		if cond := workload.FindCondition(got, berthv1alpha1.WorkloadQuotaReserved); cond == nil || cond.Reason != berthv1alpha1.ReasonInadmissible {
			t.Errorf("%s: waits with %v, want reason %s", wl.Name, cond, berthv1alpha1.ReasonInadmissible)
		}
		if !f[key] {
			t.Errorf("%s: the writer of reasons to wait was not told to forget it", wl.Name)
		}
	}
}
