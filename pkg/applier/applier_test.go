package applier

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// The scheduler hands the Applier the informer's own objects: an admission
// and a preemption write the change and leave those objects as they were.
func TestApplierLeavesTheCachedObjectAlone(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// Conditions already there, so that a change in place would reach the
	// cache's slice.
	pending := utiltesting.MakeWorkload("pending", "ns").Queue("main").Request(1, "cpu", "1").
		Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).
		Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 0).Obj()
	victim := utiltesting.MakeWorkload("victim", "ns").Queue("main").Request(1, "cpu", "1").
		Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, 0).
		AdmittedIn("cq", "default").Obj()
	victim.Status.RequeueState = &berthv1alpha1.RequeueState{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pending, victim).WithStatusSubresource(&berthv1alpha1.Workload{}).Build()
	cached := map[string]*berthv1alpha1.Workload{}
	for _, wl := range []*berthv1alpha1.Workload{pending, victim} {
		got := &berthv1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(wl), got); err != nil {
			t.Fatal(err)
		}
		cached[wl.Name] = got
	}
	before := map[string]*berthv1alpha1.Workload{}
	for name, wl := range cached {
		before[name] = wl.DeepCopy()
	}

	noChecks := func(context.Context, berthv1alpha1.ClusterQueueReference) (*berthv1alpha1.ClusterQueue, error) {
		return utiltesting.MakeClusterQueue("cq").Obj(), nil
	}
	a := New(workloadwriter.NewUpdate(c), c, events.NewFakeRecorder(10), nil, noChecks)
	written, err := a.Admit(ctx, cached["pending"], utiltesting.MakeAdmission("cq").Obj())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Preempt(ctx, cached["victim"], "InClusterQueue", "Preempted to admit ns/pending"); err != nil {
		t.Fatal(err)
	}
	for name, wl := range cached {
		if !equality.Semantic.DeepEqual(wl, before[name]) {
			t.Errorf("the cached %s changed (-before +after):\n%s", name, cmp.Diff(before[name], wl))
		}
	}

	stored := &berthv1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pending), stored); err != nil {
		t.Fatal(err)
	}
	if !workload.HasQuotaReservation(stored) || stored.ResourceVersion != written.ResourceVersion {
		t.Errorf("stored %s admitted %v at resourceVersion %s; the Applier returned %s", stored.Name,
			workload.HasQuotaReservation(stored), stored.ResourceVersion, written.ResourceVersion)
	}
	conditions := func(wl *berthv1alpha1.Workload) map[string]metav1.ConditionStatus {
		out := map[string]metav1.ConditionStatus{}
		for _, c := range wl.Status.Conditions {
			out[c.Type] = c.Status
		}
		return out
	}
	if diff := cmp.Diff(conditions(stored), conditions(written)); diff != "" || !equality.Semantic.DeepEqual(stored.Status.Admission, written.Status.Admission) {
		t.Errorf("the returned status differs from the stored one: admission %+v, stored %+v; conditions (-stored +returned):\n%s",
			written.Status.Admission, stored.Status.Admission, diff)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(victim), stored); err != nil {
		t.Fatal(err)
	}
	if workload.HasQuotaReservation(stored) || workload.FindCondition(stored, berthv1alpha1.WorkloadPreempted) == nil {
		t.Errorf("the victim was not preempted and requeued: %+v", stored.Status)
	}
}

// lostAnswer stores the status through its inner writer, when store is
// set, and then fails as a connection lost before the answer came.
type lostAnswer struct {
	inner workloadwriter.Writer
	store bool
}

func (l lostAnswer) Create(ctx context.Context, wl *berthv1alpha1.Workload) error {
	return l.inner.Create(ctx, wl)
}

func (l lostAnswer) WriteStatus(ctx context.Context, wl *berthv1alpha1.Workload) error {
	if l.store {
		if err := l.inner.WriteStatus(ctx, wl.DeepCopy()); err != nil {
			return err
		}
	}
	return io.ErrUnexpectedEOF
}

// TestAdmissionWhoseAnswerWasLost: an admission the API server stored,
// whose answer the connection lost, is an admission: the scheduler must
// count its quota, or it gives the quota to another workload while this
// one runs. One that was not stored, or that the API server refused, is
// an error.
func TestAdmissionWhoseAnswerWasLost(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	noChecks := func(context.Context, berthv1alpha1.ClusterQueueReference) (*berthv1alpha1.ClusterQueue, error) {
		return utiltesting.MakeClusterQueue("cq").Obj(), nil
	}
	for _, stored := range []bool{true, false} {
		ctx := context.Background()
		wl := utiltesting.MakeWorkload("w", "ns").Queue("main").Request(1, "cpu", "1").Obj()
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(wl).WithStatusSubresource(&berthv1alpha1.Workload{}).Build()
		cached := &berthv1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(wl), cached); err != nil {
			t.Fatal(err)
		}
		a := New(lostAnswer{inner: workloadwriter.NewUpdate(c), store: stored}, c, events.NewFakeRecorder(10), nil, noChecks)
		written, err := a.Admit(ctx, cached, utiltesting.MakeAdmission("cq").Obj())
		switch {
		case stored && (err != nil || !workload.HasQuotaReservation(written)):
			t.Errorf("stored: Admit() = %v, %v; want the stored admission", written, err)
		case !stored && !errors.Is(err, io.ErrUnexpectedEOF):
			t.Errorf("not stored: Admit() error %v, want the lost connection's", err)
		}
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "berth.dev", Resource: "workloads"}, "w", errors.New("changed"))
	if mayHaveLanded(conflict) || !mayHaveLanded(apierrors.NewTimeoutError("slow", 1)) || !mayHaveLanded(io.ErrUnexpectedEOF) {
		t.Error("a conflict is refused, a timeout and a lost connection may have landed")
	}
}
