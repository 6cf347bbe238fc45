package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/auditor"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestAuditFindsPodsBeyondAdmission plays a Job controller that runs more
// than Berth admitted: a second pod of a Job admitted for one, and a pod,
// labelled with the queue, of a Job that waits for quota (a pod Berth's
// cache of managed pods does not hold). The audit counts both in the
// ClusterQueue's berth_unaccounted_resources and tells each owner once;
// when the pods end, the metric is 0 again.
func TestAuditFindsPodsBeyondAdmission(t *testing.T) {
	ns, cq := queueSetup(t, "4", nil)
	train := utiltesting.MakeJob("train", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	big := utiltesting.MakeJob("big", ns).Queue("main").Request(corev1.ResourceCPU, "10").Obj()
	mustCreate(t, train, big)
	wl := workloadOf(t, train, "train admitted", admitted)
	workloadOf(t, big, "big waiting", pendingWith("needs 10 cpu"))
	running := jobState(t, train, false)
	waiting := jobState(t, big, true)

	unaccounted := func(want float64) func(context.Context) error {
		return func(context.Context) error {
			if v, ok := series(t, "berth_unaccounted_resources", map[string]string{"cluster_queue": cq, "resource": "cpu"}); !ok || v != want {
				return errorf("berth_unaccounted_resources{cluster_queue=%q,resource=cpu} is %v (found %v), want %v", cq, v, ok, want)
			}
			return nil
		}
	}
	waitFor(t, "no unaccounted cpu", unaccounted(0))

	// What the Job controller would create from the admitted template, one
	// pod more than admitted; and a pod of the waiting Job. Berth holds a
	// queued pod that names a waiting Job as its controller, so this one
	// is let through as the running Job's (its selector's) and then made
	// to name the waiting Job.
	admittedPod, extra := podOf(running, "train-0"), podOf(running, "train-1")
	rogue := podOf(waiting, "big-0")
	rogue.OwnerReferences = admittedPod.OwnerReferences
	rogue.Labels = map[string]string{berthv1alpha1.QueueNameLabel: "main"}
	maps.Copy(rogue.Labels, running.Spec.Selector.MatchLabels)
	mustCreate(t, admittedPod, extra, rogue)
	repoint := client.MergeFrom(rogue.DeepCopy())
	rogue.OwnerReferences = podOf(waiting, "big-0").OwnerReferences
	if err := server.Client.Patch(ctxFor(t), rogue, repoint); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "1 cpu beyond train's admission and big's 10", unaccounted(11))
	waitForEvent(t, ns, "train", auditor.ReasonUnaccountedPods,
		fmt.Sprintf("2 pods of Workload %s use 2 cpu, beyond the 1 cpu that its admission in ClusterQueue %s holds for 1 pod: train-0 on node-1, train-1 on node-1", wl.Name, cq))
	waitForEvent(t, ns, "big-0", auditor.ReasonUnaccountedPods, "Pod big-0 runs on node node-1 using 10 cpu while its Workload")

	setPodPhase(t, extra, corev1.PodSucceeded)
	setPodPhase(t, rogue, corev1.PodFailed)
	waitFor(t, "no unaccounted cpu once the pods ended", unaccounted(0))
}

// podOf is a pod of job as the Job controller makes it, bound to node-1.
func podOf(job *batchv1.Job, name string) *corev1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: job.Namespace, Labels: tmpl.Labels, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}},
		Spec: tmpl.Spec,
	}
	pod.Spec.NodeName = "node-1"
	return pod
}
