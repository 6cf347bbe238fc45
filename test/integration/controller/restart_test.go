package controller

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestRestartLosesNothingAndKeepsQuota stops the manager while jobs wait
// and run, changes things while it is down, and starts a new one: what was
// admitted stays admitted, nothing is admitted beyond quota, and quota
// freed while it was down goes to what waits.
func TestRestartLosesNothingAndKeepsQuota(t *testing.T) {
	ns, cqName := queueSetup(t, "2", nil)
	var jobs []*batchv1.Job
	for i := range 3 {
		job := utiltesting.MakeJob(fmt.Sprintf("job-%d", i), ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
		mustCreate(t, job)
		jobs = append(jobs, job)
	}
	waitForAdmitted(t, ns, 2)
	waitFor(t, "the jobs to run as admitted", func(ctx context.Context) error { return checkJobsMatchWorkloads(ctx, ns, 3) })

	stopManager()
	// While no controller runs, a running job completes and a workload
	// is submitted directly.
	var done *batchv1.Job
	for _, job := range jobs {
		cur := &batchv1.Job{}
		if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(job), cur); err != nil {
			t.Fatal(err)
		}
		if !ptr.Deref(cur.Spec.Suspend, false) {
			done = job
			break
		}
	}
	finishJob(t, done)
	direct := utiltesting.MakeWorkload("direct", ns).Queue("main").PodSets(*utiltesting.MakePodSet("main", 1).Request("cpu", "1").Obj()).Obj()
	direct.CreationTimestamp = metav1.Time{}
	mustCreate(t, direct)
	if err := startManager(); err != nil {
		t.Fatalf("starting a new manager: %v", err)
	}

	workloadOf(t, done, "the job that completed while the manager was down finished", conditionIs(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, ""))
	waitForAdmitted(t, ns, 2)
	waitFor(t, "only admitted jobs to run", func(ctx context.Context) error { return checkJobsMatchWorkloads(ctx, ns, 3) })
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.AdmittedWorkloads != 2 || cq.Status.PendingWorkloads != 1 {
			return fmt.Errorf("want 2 admitted and 1 pending, status %+v", cq.Status)
		}
		return nil
	})
}

// waitForAdmitted waits until exactly n unfinished workloads of ns are
// admitted, and fails at once if ever more are.
func waitForAdmitted(t *testing.T, ns string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d admitted workloads", n), func(ctx context.Context) error {
		wls := &berthv1alpha1.WorkloadList{}
		if err := server.Client.List(ctx, wls, client.InNamespace(ns)); err != nil {
			return err
		}
		admitted := 0
		for i := range wls.Items {
			if workload.IsAdmitted(&wls.Items[i]) && !workload.IsFinished(&wls.Items[i]) {
				admitted++
			}
		}
		if admitted > n {
			t.Fatalf("%d workloads admitted on quota for %d", admitted, n)
		}
		if admitted != n {
			return fmt.Errorf("%d admitted", admitted)
		}
		return nil
	})
}

// checkJobsMatchWorkloads checks that every job has a workload and runs
// only if its workload is admitted.
func checkJobsMatchWorkloads(ctx context.Context, ns string, want int) error {
	jobs := &batchv1.JobList{}
	if err := server.Client.List(ctx, jobs, client.InNamespace(ns)); err != nil {
		return err
	}
	wls := &berthv1alpha1.WorkloadList{}
	if err := server.Client.List(ctx, wls, client.InNamespace(ns)); err != nil {
		return err
	}
	if len(jobs.Items) != want {
		return fmt.Errorf("%d jobs, want %d", len(jobs.Items), want)
	}
	admitted := map[string]bool{}
	for i := range wls.Items {
		for _, o := range wls.Items[i].OwnerReferences {
			admitted[o.Name] = workload.IsAdmitted(&wls.Items[i]) && !workload.IsFinished(&wls.Items[i])
		}
	}
	for _, j := range jobs.Items {
		if _, ok := admitted[j.Name]; !ok {
			return fmt.Errorf("job %s has no workload", j.Name)
		}
		if j.Status.CompletionTime != nil {
			continue
		}
		if running := !ptr.Deref(j.Spec.Suspend, false); running != admitted[j.Name] {
			return fmt.Errorf("job %s runs=%v but admitted=%v", j.Name, running, admitted[j.Name])
		}
	}
	return nil
}
