package controller

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/metrics"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// queueSetup creates a flavor, a ClusterQueue with cpu quota in it and a
// LocalQueue "main" in a new namespace, and returns the namespace and the
// ClusterQueue's name.
func queueSetup(t *testing.T, cpu string, mutate func(*utiltesting.ClusterQueueWrapper)) (string, string) {
	t.Helper()
	flavor := unique("flavor")
	rf := utiltesting.MakeResourceFlavor(flavor)
	rf.Spec.NodeLabels = map[string]string{"pool": flavor}
	rf.Spec.Tolerations = []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: flavor, Effect: corev1.TaintEffectNoSchedule}}
	cq := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).Resource("cpu", cpu).Obj())
	if mutate != nil {
		mutate(cq)
	}
	ns := namespace(t, nil)
	mustCreate(t, rf, cq.Obj(), utiltesting.MakeLocalQueue("main", ns, cq.Name))
	return ns, cq.Name
}

func TestJobLifecycle(t *testing.T) {
	ns, cqName := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("train", ns).Queue("main").Parallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)

	wl := workloadOf(t, job, "the workload admitted", admitted)
	if diff := cmp.Diff(cqName, string(wl.Status.Admission.ClusterQueue)); diff != "" {
		t.Errorf("admitted in (-want +got):\n%s", diff)
	}
	running := jobState(t, job, false)
	flavor := string(wl.Status.Admission.PodSetAssignments[0].Flavors[corev1.ResourceCPU])
	tmpl := running.Spec.Template
	if diff := cmp.Diff(map[string]string{"pool": flavor}, tmpl.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	gotLabels := map[string]string{}
	for _, k := range []string{berthv1alpha1.WorkloadLabel, berthv1alpha1.PodSetLabel} {
		gotLabels[k] = tmpl.Labels[k]
	}
	wantLabels := map[string]string{berthv1alpha1.WorkloadLabel: wl.Name, berthv1alpha1.PodSetLabel: "main"}
	if diff := cmp.Diff(wantLabels, gotLabels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if len(tmpl.Spec.Tolerations) != 1 || tmpl.Spec.Tolerations[0].Value != flavor {
		t.Errorf("tolerations = %v, want the flavor's", tmpl.Spec.Tolerations)
	}
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.AdmittedWorkloads != 1 || cq.Status.FlavorsUsage[0].Resources[0].Total.String() != "2" {
			return fmt.Errorf("want 1 admitted using 2 cpu, status %+v", cq.Status)
		}
		return nil
	})

	if got := testutil.ToFloat64(metrics.AdmittedWorkloads.WithLabelValues(metrics.CQ(cqName)...)); got != 1 {
		t.Errorf("berth_admitted_workloads_total{cluster_queue=%q} = %v, want 1", cqName, got)
	}

	// The admission, in numbers, in the Workload's condition and the job's
	// event.
	admittedBy := regexp.MustCompile(`^Admitted by ClusterQueue ` + cqName + ` after waiting [0-9]+s: main: 2 pods, cpu on ` + flavor + `$`)
	if c := workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted); !admittedBy.MatchString(c.Message) {
		t.Errorf("Admitted condition message %q, want it to match %s", c.Message, admittedBy)
	}

	finishJob(t, job)
	workloadOf(t, job, "the workload finished", conditionIs(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, berthv1alpha1.ReasonSucceeded))
	// The job's events and its Workload's, in numbers.
	for _, e := range []struct{ name, reason, note string }{
		{job.Name, jobframework.EventCreatedWorkload, "Created Workload " + wl.Name},
		{job.Name, berthv1alpha1.WorkloadAdmitted, workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted).Message},
		{wl.Name, berthv1alpha1.WorkloadFinished, "Job completed: 2 pods succeeded"},
	} {
		waitForEvent(t, ns, e.name, e.reason, e.note)
	}
	// One write admits: the Workload has no event of its own admission.
	if got := eventsOn(t, ns, wl.Name, berthv1alpha1.WorkloadAdmitted); got != 0 {
		t.Errorf("%d Admitted events on the Workload, want none", got)
	}
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.AdmittedWorkloads != 0 {
			return fmt.Errorf("want 0 admitted, status %+v", cq.Status)
		}
		return nil
	})
}

func TestJobForMissingLocalQueueNeverRuns(t *testing.T) {
	ns := namespace(t, nil)
	job := utiltesting.MakeJob("lost", ns).Queue("nowhere").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "a message naming the missing queue", pendingWith("LocalQueue nowhere does not exist in namespace "+ns))
	if got := jobState(t, job, true); !ptr.Deref(got.Spec.Suspend, false) {
		t.Fatal("the job runs without admission")
	}
}

func TestPartialAdmission(t *testing.T) {
	ns, _ := queueSetup(t, "3", nil)
	job := utiltesting.MakeJob("elastic", ns).Queue("main").Parallelism(5).MinParallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	wl := workloadOf(t, job, "partial admission", admitted)
	if got := ptr.Deref(wl.Status.Admission.PodSetAssignments[0].Count, 0); got != 3 {
		t.Errorf("admitted count = %d, want 3", got)
	}
	if got := ptr.Deref(jobState(t, job, false).Spec.Parallelism, 0); got != 3 {
		t.Errorf("job parallelism = %d, want 3", got)
	}
}

func TestWaitingMessageHasNumbers(t *testing.T) {
	ns, _ := queueSetup(t, "2", nil)
	job := utiltesting.MakeJob("big", ns).Queue("main").Parallelism(3).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "a pending message with numbers", pendingWith("needs 3 cpu, 2 available"))
}

func waitForClusterQueue(t testing.TB, name string, check func(*berthv1alpha1.ClusterQueue) error) {
	t.Helper()
	waitFor(t, "ClusterQueue "+name, func(ctx context.Context) error {
		cq := &berthv1alpha1.ClusterQueue{}
		if err := server.Client.Get(ctx, client.ObjectKey{Name: name}, cq); err != nil {
			return err
		}
		return check(cq)
	})
}
