package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/test/util/apiserver"
)

const trainerStep = "trainer.kubeflow.org/trainjob-ancestor-step"

// trainingRuntime is a ClusterTrainingRuntime of one trainer step whose
// node container asks for one cpu, for one node unless the TrainJob says.
func trainingRuntime() *trainer.ClusterTrainingRuntime {
	return &trainer.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: unique("torch")},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{NumNodes: ptr.To[int32](1)},
			Template: trainer.JobSetTemplateSpec{Spec: jobsetapi.JobSetSpec{ReplicatedJobs: []jobsetapi.ReplicatedJob{{
				Name:     "node",
				Replicas: 1,
				Template: batchv1.JobTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainerStep: "trainer"}},
					Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "node", Image: "pytorch/pytorch", Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
						}}},
					}}},
				},
			}}}},
		},
	}
}

// trainJob is a TrainJob in ns on LocalQueue main of nodes nodes, each
// asking for cpu.
func trainJob(ns, name, runtime string, nodes int32, cpu string) *trainer.TrainJob {
	return &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: runtime},
			Trainer: &trainer.Trainer{NumNodes: ptr.To(nodes), ResourcesPerNode: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}},
		},
	}
}

// jobSetOf is the JobSet Trainer makes of tj, suspended, with nodes pods
// of cpu each: its labels from tj's spec.labels, tj its controller.
func jobSetOf(tj *trainer.TrainJob, nodes int32, cpu string) *jobsetapi.JobSet {
	rt := trainingRuntime().Spec.Template.Spec
	rj := &rt.ReplicatedJobs[0]
	rj.Template.Spec.Parallelism, rj.Template.Spec.Completions = ptr.To(nodes), ptr.To(nodes)
	rj.Template.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	rt.Suspend = ptr.To(true)
	return &jobsetapi.JobSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: tj.Name, Namespace: tj.Namespace, Labels: tj.Spec.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(tj, trainer.GroupVersion.WithKind("TrainJob"))},
		},
		Spec: rt,
	}
}

func trainJobWorkload(ctx context.Context, tj *trainer.TrainJob) (*berthv1alpha1.Workload, error) {
	return jobWorkload(ctx, tj, trainer.GroupVersion.WithKind("TrainJob"))
}

// TestTrainJobRunsOnlyAsAdmitted: a TrainJob's podsets are its runtime's
// as the TrainJob sizes them; it is admitted whole and unsuspended; its
// JobSet, which Trainer makes, gets the admission's labels and node
// selector as it is unsuspended, and is refused when it would run more
// than admitted or before its TrainJob is admitted.
func TestTrainJobRunsOnlyAsAdmitted(t *testing.T) {
	ns, cqName := queueSetup(t, "8", nil)
	rt := trainingRuntime()
	mustCreate(t, rt)
	first := trainJob(ns, "first", rt.Name, 3, "2")
	mustCreate(t, first)
	if first.Spec.Labels[berthv1alpha1.QueueNameLabel] != "main" || !ptr.Deref(first.Spec.Suspend, false) {
		t.Fatalf("the new TrainJob: spec.labels %v, suspend %v; want the queue handed down and suspended", first.Spec.Labels, first.Spec.Suspend)
	}
	var wl *berthv1alpha1.Workload
	waitFor(t, "the first TrainJob admitted and running", func(ctx context.Context) (err error) {
		if wl, err = trainJobWorkload(ctx, first); err != nil {
			return err
		}
		if err := admitted(wl); err != nil {
			return err
		}
		if ptr.Deref(first.Spec.Suspend, false) {
			return fmt.Errorf("still suspended")
		}
		return nil
	})
	if ps := wl.Spec.PodSets; len(ps) != 1 || ps[0].Name != "node" || ps[0].Count != 3 ||
		!ps[0].Template.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("2")) {
		t.Fatalf("podsets %+v; want node: 3 pods of 2 cpus", ps)
	}
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error { return usageIs(cq, "6", "0") })

	// Trainer renders the JobSet from a runtime edited since: 4 cpus a pod.
	tooBig := jobSetOf(first, 3, "4")
	tooBig.Spec.Suspend = ptr.To(false)
	err := server.Client.Create(ctxFor(t), tooBig)
	if err == nil || !strings.Contains(err.Error(), "other requests per pod than admitted") || !strings.Contains(err.Error(), "spec.suspend") {
		t.Fatalf("creating a running JobSet of 4-cpu pods for a TrainJob admitted for 2: %v; want refused, naming spec.suspend", err)
	}
	js := jobSetOf(first, 3, "2")
	mustCreate(t, js)
	waitFor(t, "unsuspending the JobSet, as Trainer does", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return err
		}
		js.Spec.Suspend = ptr.To(false)
		return server.Client.Update(ctx, js)
	})
	tmpl := js.Spec.ReplicatedJobs[0].Template.Spec.Template
	flavor := string(wl.Status.Admission.PodSetAssignments[0].Flavors[corev1.ResourceCPU])
	if tmpl.Labels[berthv1alpha1.WorkloadLabel] != wl.Name || tmpl.Spec.NodeSelector["pool"] != flavor {
		t.Errorf("the running JobSet's template: labels %v, node selector %v; want workload %s and pool %s", tmpl.Labels, tmpl.Spec.NodeSelector, wl.Name, flavor)
	}
	waitUpdateRefused(t, "growing the running JobSet to 4 pods", js, func(js *jobsetapi.JobSet) {
		js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](4)
		js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To[int32](4)
	}, "4 pods, admitted 3")
	waitUpdateRefused(t, "taking the queue label off the JobSet", js, func(js *jobsetapi.JobSet) {
		delete(js.Labels, berthv1alpha1.QueueNameLabel)
	}, "metadata.labels[berth.dev/queue-name]")

	// The second, 2 x 2 cpus, waits: its JobSet may not run.
	second := trainJob(ns, "second", rt.Name, 2, "2")
	mustCreate(t, second)
	waitFor(t, "the second TrainJob waiting", func(ctx context.Context) error {
		w, err := trainJobWorkload(ctx, second)
		if err != nil {
			return err
		}
		return pendingWith("needs 4 cpu, 2 available")(w)
	})
	waitUpdateRefused(t, "starting the waiting TrainJob", second, func(tj *trainer.TrainJob) { tj.Spec.Suspend = ptr.To(false) }, "spec.suspend")
	secondJS := jobSetOf(second, 2, "2")
	mustCreate(t, secondJS)
	waitUpdateRefused(t, "starting the waiting TrainJob's JobSet", secondJS, func(js *jobsetapi.JobSet) { js.Spec.Suspend = ptr.To(false) }, "it is not admitted")
	waitUpdateRefused(t, "dropping the queue from the TrainJob's spec.labels", second, func(tj *trainer.TrainJob) {
		delete(tj.Spec.Labels, berthv1alpha1.QueueNameLabel)
	}, "spec.labels[berth.dev/queue-name]")

	// Trainer marks the first TrainJob complete: its Workload finishes, and
	// its JobSet, which ran, may still be written as long as it runs no more.
	waitFor(t, "completing the first TrainJob", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
			return err
		}
		first.Status.Conditions = append(first.Status.Conditions, metav1.Condition{
			Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobsCompleted", LastTransitionTime: metav1.Now()})
		return server.Client.Status().Update(ctx, first)
	})
	waitFor(t, "the first TrainJob's Workload finished", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("not finished: %v", wl.Status.Conditions)
		}
		return nil
	})
	waitFor(t, "annotating the finished TrainJob's JobSet", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return err
		}
		js.Annotations = map[string]string{"example.com/note": "done"}
		return server.Client.Update(ctx, js)
	})
	// Suspended, it does not start again on a finished Workload.
	waitFor(t, "suspending the finished TrainJob's JobSet", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return err
		}
		js.Spec.Suspend = ptr.To(true)
		return server.Client.Update(ctx, js)
	})
	waitUpdateRefused(t, "starting it again", js, func(js *jobsetapi.JobSet) { js.Spec.Suspend = ptr.To(false) }, "it is not admitted")

	// No JobSet queues by itself: only the two TrainJobs' Workloads.
	list := &berthv1alpha1.WorkloadList{}
	if err := server.Client.List(ctxFor(t), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("%d Workloads in the namespace, want the two TrainJobs'", len(list.Items))
	}
}

// TestTrainJobSampleIsAdmitted creates config/samples/trainer's runtime and
// TrainJob: the CRDs accept them, and Berth admits the TrainJob whole, 4
// nodes of 8 GPUs.
func TestTrainJobSampleIsAdmitted(t *testing.T) {
	flavor := unique("flavor")
	cq := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).
		Resource("cpu", "64").Resource("memory", "512Gi").Resource("nvidia.com/gpu", "32").Obj())
	ns := namespace(t, nil)
	mustCreate(t, utiltesting.MakeResourceFlavor(flavor), cq.Obj(), utiltesting.MakeLocalQueue("training", ns, cq.Name))
	raw, err := os.ReadFile(filepath.Join(apiserver.RepoRoot(), "config", "samples", "trainer", "trainjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(raw), "\n---\n")
	rt, tj := &trainer.ClusterTrainingRuntime{}, &trainer.TrainJob{}
	if len(docs) != 2 {
		t.Fatalf("the sample has %d documents, want the runtime and the TrainJob", len(docs))
	}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), rt); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), tj); err != nil {
		t.Fatal(err)
	}
	// Cluster-scoped, and shared by every run of the suite: a name of its own.
	rt.Name = unique(rt.Name)
	tj.Namespace, tj.Spec.RuntimeRef.Name = ns, rt.Name
	mustCreate(t, rt, tj)
	waitFor(t, "the sample admitted", func(ctx context.Context) error {
		w, err := trainJobWorkload(ctx, tj)
		if err != nil {
			return err
		}
		return admitted(w)
	})
	waitForClusterQueue(t, cq.Name, func(cq *berthv1alpha1.ClusterQueue) error {
		// The first resource, cpu: 4 nodes of 8.
		return usageIs(cq, "32", "0")
	})
}
