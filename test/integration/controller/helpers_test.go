package controller

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
)

const timeout = 30 * time.Second

var seq atomic.Int32

// unique makes a name unique in the suite, for cluster-scoped objects.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

func ctxFor(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*timeout)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a namespace for one test.
func namespace(t testing.TB, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unique("ns"), Labels: labels}}
	mustCreate(t, ns)
	dumpOnFailure(t, ns.Name)
	return ns.Name
}

// mustCreate creates objects and deletes them when the test ends.
func mustCreate(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := server.Client.Create(ctxFor(t), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() {
			_ = server.Client.Delete(context.Background(), obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		})
	}
}

// waitFor polls check until it returns nil, and fails the test with its
// last error when it does not in time.
func waitFor(t testing.TB, what string, check func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctxFor(t), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := check(ctx)
		if last == nil || ctx.Err() == nil && !strings.Contains(fmt.Sprint(err), "would exceed context deadline") {
			// An error of the poll's own deadline (or of the client's
			// rate limiter foreseeing it) says nothing.
			last = err
		}
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, last)
	}
}

// workloadOf waits for a Job's Workload and returns it when check passes.
func workloadOf(t *testing.T, job *batchv1.Job, what string, check func(*berthv1alpha1.Workload) error) *berthv1alpha1.Workload {
	t.Helper()
	wl := &berthv1alpha1.Workload{}
	waitFor(t, what, func(ctx context.Context) error {
		cur := &batchv1.Job{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(job), cur); err != nil {
			return err
		}
		key := client.ObjectKey{Namespace: job.Namespace, Name: jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), cur.Name, string(cur.UID))}
		if err := server.Client.Get(ctx, key, wl); err != nil {
			return err
		}
		return check(wl)
	})
	return wl
}

func admitted(wl *berthv1alpha1.Workload) error {
	if !workload.IsAdmitted(wl) {
		return fmt.Errorf("workload %s not admitted; conditions %v", wl.Name, wl.Status.Conditions)
	}
	return nil
}

func pendingWith(msg string) func(*berthv1alpha1.Workload) error {
	return func(wl *berthv1alpha1.Workload) error {
		c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved)
		if c == nil || c.Status != metav1.ConditionFalse || !contains(c.Message, msg) {
			return fmt.Errorf("want QuotaReserved=False with %q; conditions %v", msg, wl.Status.Conditions)
		}
		return nil
	}
}

func conditionIs(typ string, status metav1.ConditionStatus, reason string) func(*berthv1alpha1.Workload) error {
	return func(wl *berthv1alpha1.Workload) error {
		c := workload.FindCondition(wl, typ)
		if c == nil || c.Status != status || (reason != "" && c.Reason != reason) {
			return fmt.Errorf("want %s=%s reason %q; conditions %v", typ, status, reason, wl.Status.Conditions)
		}
		return nil
	}
}

// jobState waits until a Job is suspended or not, and returns it.
func jobState(t *testing.T, job *batchv1.Job, suspended bool) *batchv1.Job {
	t.Helper()
	cur := &batchv1.Job{}
	waitFor(t, fmt.Sprintf("job %s suspended=%v", job.Name, suspended), func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(job), cur); err != nil {
			return err
		}
		if got := ptr.Deref(cur.Spec.Suspend, false); got != suspended {
			return fmt.Errorf("suspend is %v", got)
		}
		return nil
	})
	return cur
}

// finishJob plays the Job controller: the job's pods all succeeded.
func finishJob(t *testing.T, job *batchv1.Job) {
	t.Helper()
	finishJobIn(t, server.Client, job)
}

// finishJobIn plays the Job controller of the API server of c.
func finishJobIn(t *testing.T, c client.Client, job *batchv1.Job) {
	t.Helper()
	waitFor(t, "job "+job.Name+" completed", func(ctx context.Context) error {
		cur := &batchv1.Job{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), cur); err != nil {
			return err
		}
		cur.Status.Active, cur.Status.Ready = 0, ptr.To[int32](0)
		now := metav1.Now()
		start := metav1.NewTime(now.Add(-time.Second))
		cur.Status.StartTime = &start
		cur.Status.CompletionTime = &now
		cur.Status.Succeeded = ptr.Deref(cur.Spec.Completions, 1)
		cur.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		}
		return c.Status().Update(ctx, cur)
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// queueFlavor is the flavor of a ClusterQueue's first resource group.
func queueFlavor(t *testing.T, name string) string {
	t.Helper()
	cq := &berthv1alpha1.ClusterQueue{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKey{Name: name}, cq); err != nil {
		t.Fatal(err)
	}
	return string(cq.Spec.ResourceGroups[0].Flavors[0].Name)
}

// usageIs checks a ClusterQueue's cpu usage and borrowed amount.
func usageIs(cq *berthv1alpha1.ClusterQueue, total, borrowed string) error {
	if len(cq.Status.FlavorsUsage) == 0 || len(cq.Status.FlavorsUsage[0].Resources) == 0 {
		return fmt.Errorf("no usage in status %+v", cq.Status)
	}
	r := cq.Status.FlavorsUsage[0].Resources[0]
	if r.Total.String() != total || r.Borrowed.String() != borrowed {
		return fmt.Errorf("usage %s borrowed %s, want %s borrowed %s", r.Total.String(), r.Borrowed.String(), total, borrowed)
	}
	return nil
}

// dumpOnFailure logs the workloads of a namespace if the test fails, so
// that a failure in CI says what state they were in.
func dumpOnFailure(t testing.TB, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		wls := &berthv1alpha1.WorkloadList{}
		if err := server.Client.List(context.Background(), wls, client.InNamespace(ns)); err != nil {
			t.Logf("listing workloads: %v", err)
			return
		}
		for _, wl := range wls.Items {
			t.Logf("workload %s: priority %v admission %+v conditions %+v", wl.Name, ptr.Deref(wl.Spec.Priority, -1), wl.Status.Admission, wl.Status.Conditions)
		}
	})
}
