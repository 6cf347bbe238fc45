package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestElasticJobGrowsBySlicesAndShrinks plays the Job controller for an
// elastic Job (its pods made from the template, as it makes them) in a
// ClusterQueue of 4 cpu: admitted at 2 pods, raised to 5, whose 3 more do
// not fit and wait, gated, as a slice while the 2 run on; lowered to 4,
// whose slice of 2 fits: the Workload grows to 4 and 2 more pods run; then
// lowered to 1: the quota is given back once the removed pods ended.
func TestElasticJobGrowsBySlicesAndShrinks(t *testing.T) {
	ns, cq := queueSetup(t, "4", nil)
	dumpOnFailure(t, ns)
	job := utiltesting.MakeJob("train", ns).Queue("main").Parallelism(2).Request(corev1.ResourceCPU, "1").Obj()
	job.Annotations = map[string]string{berthv1alpha1.ElasticAnnotation: "true"}
	// Completions bound the pods a Job runs at once as its parallelism does.
	job.Spec.Completions = ptr.To[int32](10)
	rigid := utiltesting.MakeJob("rigid", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	rigid.Spec.Completions = ptr.To[int32](10)
	mustCreate(t, job)
	tmpl := job.Spec.Template
	if !slices.ContainsFunc(tmpl.Spec.SchedulingGates, isElastic) || tmpl.Labels[berthv1alpha1.ElasticLabel] != "true" {
		t.Fatalf("the elastic Job's template has gates %v and labels %v, want the gate and label %s", tmpl.Spec.SchedulingGates, tmpl.Labels, berthv1alpha1.ElasticGate)
	}
	wl := workloadOf(t, job, "the Job admitted at 2 pods", admitted)
	running := jobState(t, job, false)

	pods := []*corev1.Pod{elasticPod(running, "train-0"), elasticPod(running, "train-1")}
	mustCreate(t, pods[0], pods[1])
	waitForPods(t, ns, "the 2 admitted pods let run", map[string]bool{"train-0": true, "train-1": true})
	waitFor(t, "Workload PodsReady once both are ready", func(ctx context.Context) error {
		for _, p := range pods {
			if err := setPodReady(ctx, p); err != nil {
				return err
			}
		}
		cur := &berthv1alpha1.Workload{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), cur); err != nil {
			return err
		}
		return conditionIs(berthv1alpha1.WorkloadPodsReady, "True", "")(cur)
	})

	// A Job that is not elastic still cannot grow while it runs.
	mustCreate(t, rigid)
	workloadOf(t, rigid, "rigid admitted", admitted)
	err := patchJob(t, rigid, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](2) })
	if !apierrors.IsInvalid(err) || !contains(err.Error(), "spec.parallelism: Forbidden: cannot change from 1 to 2 pods") || !contains(err.Error(), berthv1alpha1.ElasticAnnotation) {
		t.Fatalf("growing a running Job that is not elastic: err = %v, want spec.parallelism forbidden, naming %s", err, berthv1alpha1.ElasticAnnotation)
	}
	if err := patchJob(t, running, func(j *batchv1.Job) { delete(j.Annotations, berthv1alpha1.ElasticAnnotation) }); !apierrors.IsInvalid(err) ||
		!contains(err.Error(), "metadata.annotations[berth.dev/elastic]: Forbidden") {
		t.Fatalf("taking the elastic annotation off: err = %v, want it forbidden, naming the annotation", err)
	}
	finishJob(t, rigid)
	workloadOf(t, rigid, "rigid finished", conditionIs(berthv1alpha1.WorkloadFinished, "True", ""))

	// Raised to 5: the slice of 3 needs 3 cpu where 2 are free.
	if err := patchJob(t, running, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](5) }); err != nil {
		t.Fatalf("raising an elastic Job's parallelism: %v", err)
	}
	slice := sliceOf(t, wl, "a slice of 3 pods waiting with the numbers", func(s *berthv1alpha1.Workload) error {
		if s.Spec.PodSets[0].Count != 3 {
			return fmt.Errorf("slice asks for %d pods, want 3", s.Spec.PodSets[0].Count)
		}
		return pendingWith("needs 3 cpu, 2 available")(s)
	})
	more := []*corev1.Pod{elasticPod(running, "train-2"), elasticPod(running, "train-3"), elasticPod(running, "train-4")}
	mustCreate(t, more[0], more[1], more[2])
	jobState(t, job, false)
	waitForPods(t, ns, "the added pods held at their gate, the running ones running",
		map[string]bool{"train-0": true, "train-1": true, "train-2": false, "train-3": false, "train-4": false})
	cur := &corev1.Pod{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(more[0]), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.SchedulingGates = nil
	if err := server.Client.Update(ctxFor(t), cur); !apierrors.IsInvalid(err) || !contains(err.Error(), "spec.schedulingGates: Forbidden: only Berth removes the gate berth.dev/elastic") {
		t.Fatalf("a user removing the elastic gate: err = %v, want it forbidden", err)
	}

	// Lowered to 4 (the Job controller deletes the last pod): the slice of
	// 2 fits, the Workload grows to 4 and 2 more pods run.
	if err := patchJob(t, running, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) }); err != nil {
		t.Fatal(err)
	}
	if err := server.Client.Delete(ctxFor(t), more[2]); err != nil {
		t.Fatal(err)
	}
	grown := workloadOf(t, job, "the Workload grown to 4 pods and 4 cpu", func(w *berthv1alpha1.Workload) error {
		psa := w.Status.Admission.PodSetAssignments[0]
		if got := ptr.Deref(psa.Count, 0); got != 4 || psa.ResourceUsage.Cpu().String() != "4" {
			return fmt.Errorf("admitted %d pods using %s cpu; want 4 and 4", got, psa.ResourceUsage.Cpu())
		}
		return nil
	})
	waitFor(t, "the slice gone once the Workload took its quota", func(ctx context.Context) error {
		err := server.Client.Get(ctx, client.ObjectKeyFromObject(slice), &berthv1alpha1.Workload{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("slice %s: %v", slice.Name, err)
		}
		return nil
	})
	waitForPods(t, ns, "4 pods run", map[string]bool{"train-0": true, "train-1": true, "train-2": true, "train-3": true})
	waitForEvent(t, ns, "train", jobframework.EventScaledUp, "Admitted slice "+slice.Name+" (2 pods of podset main) in ClusterQueue "+cq)
	waitForClusterQueue(t, cq, func(c *berthv1alpha1.ClusterQueue) error { return usageIs(c, "4", "0") })

	// Lowered to 1: the quota stays while the removed pods run, and is
	// given back once they ended.
	if err := patchJob(t, running, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](1) }); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{pods[1], more[0]} {
		setPodPhase(t, p, corev1.PodFailed)
	}
	workloadOf(t, job, "the Workload still at 4 while a removed pod runs", func(w *berthv1alpha1.Workload) error {
		if got := ptr.Deref(w.Status.Admission.PodSetAssignments[0].Count, 0); got != 4 {
			return fmt.Errorf("admitted %d pods, want 4", got)
		}
		return nil
	})
	setPodPhase(t, more[1], corev1.PodSucceeded)
	workloadOf(t, job, "the Workload shrunk to 1 pod and 1 cpu", func(w *berthv1alpha1.Workload) error {
		psa := w.Status.Admission.PodSetAssignments[0]
		if got := ptr.Deref(psa.Count, 0); got != 1 || psa.ResourceUsage.Cpu().String() != "1" {
			return fmt.Errorf("admitted %d pods using %s cpu; want 1 and 1", got, psa.ResourceUsage.Cpu())
		}
		return nil
	})
	waitForEvent(t, ns, "train", jobframework.EventScaledDown, "3 pods of podset main were removed and have ended")
	waitForClusterQueue(t, cq, func(c *berthv1alpha1.ClusterQueue) error { return usageIs(c, "1", "0") })
	if grown.UID != wl.UID {
		t.Errorf("the Workload was replaced (%s, was %s): an elastic Job keeps its Workload", grown.UID, wl.UID)
	}
}

func isElastic(g corev1.PodSchedulingGate) bool { return g.Name == berthv1alpha1.ElasticGate }

// elasticPod is a pod of an elastic job as the Job controller makes it from
// the running template: gated, not bound.
func elasticPod(job *batchv1.Job, name string) *corev1.Pod {
	p := podOf(job, name)
	p.Spec.NodeName = ""
	return p
}

// setPodReady plays the scheduler and the kubelet for a pod let run.
func setPodReady(ctx context.Context, pod *corev1.Pod) error {
	cur := &corev1.Pod{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
		return err
	}
	if cur.Status.Phase == corev1.PodRunning {
		return nil
	}
	cur.Status.Phase = corev1.PodRunning
	cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return server.Client.Status().Update(ctx, cur)
}

// waitForPods waits until each named pod of ns is let run (true: it has no
// elastic gate) or held (false).
func waitForPods(t *testing.T, ns, what string, want map[string]bool) {
	t.Helper()
	waitFor(t, what, func(ctx context.Context) error {
		for name, run := range want {
			p := &corev1.Pod{}
			if err := server.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return err
			}
			if gated := slices.ContainsFunc(p.Spec.SchedulingGates, isElastic); gated == run {
				return fmt.Errorf("pod %s gated=%v", name, gated)
			}
		}
		return nil
	})
}

// sliceOf waits for the slice that grows wl and returns it once check
// passes.
func sliceOf(t *testing.T, wl *berthv1alpha1.Workload, what string, check func(*berthv1alpha1.Workload) error) *berthv1alpha1.Workload {
	t.Helper()
	var slice *berthv1alpha1.Workload
	waitFor(t, what, func(ctx context.Context) error {
		list := &berthv1alpha1.WorkloadList{}
		if err := server.Client.List(ctx, list, client.InNamespace(wl.Namespace), client.MatchingLabels{berthv1alpha1.SliceOfLabel: wl.Name}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d slices of %s", len(list.Items), wl.Name)
		}
		slice = &list.Items[0]
		if f := workload.SliceFlavors(slice); len(f["main"]) == 0 {
			return fmt.Errorf("slice %s is pinned to no flavor: %v", slice.Name, slice.Annotations)
		}
		return check(slice)
	})
	return slice
}

// patchJob changes the Job as its user would, with the Job read afresh.
func patchJob(t *testing.T, job *batchv1.Job, change func(*batchv1.Job)) error {
	t.Helper()
	cur := &batchv1.Job{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(job), cur); err != nil {
		return err
	}
	patched := cur.DeepCopy()
	change(patched)
	return server.Client.Patch(ctxFor(t), patched, client.MergeFrom(cur))
}
