package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// rayCluster is a RayCluster in ns on LocalQueue main: a head of one cpu
// and a worker group of workers pods of two cpus each.
func rayCluster(ns, name string, workers int32) *rayv1.RayCluster {
	spec := rayJob(ns, name, workers).Spec.RayClusterSpec
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}},
		Spec:       *spec,
	}
}

func rayClusterWorkload(ctx context.Context, rc *rayv1.RayCluster) (*berthv1alpha1.Workload, error) {
	return jobWorkload(ctx, rc.DeepCopy(), rayv1.GroupVersion.WithKind("RayCluster"))
}

// jobWorkload reads job, of kind gvk, again into itself, and returns its
// Workload.
func jobWorkload(ctx context.Context, job client.Object, gvk schema.GroupVersionKind) (*berthv1alpha1.Workload, error) {
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		return nil, err
	}
	wl := &berthv1alpha1.Workload{}
	key := client.ObjectKey{Namespace: job.GetNamespace(), Name: jobframework.WorkloadName(gvk, job.GetName(), string(job.GetUID()))}
	return wl, server.Client.Get(ctx, key, wl)
}

// waitUpdateRefused waits until the update of obj that edit makes is
// refused, naming field.
func waitUpdateRefused[T client.Object](t *testing.T, what string, obj T, edit func(T), field string) {
	t.Helper()
	waitFor(t, what+" refused", func(ctx context.Context) error {
		cur, ok := obj.DeepCopyObject().(T)
		if !ok {
			return fmt.Errorf("copying %T", obj)
		}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return err
		}
		edit(cur)
		err := server.Client.Update(ctx, cur)
		if err == nil {
			return fmt.Errorf("%s was accepted", what)
		}
		if !strings.Contains(err.Error(), field) {
			return fmt.Errorf("refused without naming %s: %w", field, err)
		}
		return nil
	})
}

func TestRayClusterAdmittedAndHeld(t *testing.T) {
	ns, cqName := rayQueueSetup(t, "8")
	// The head (1) and the workers (2 x 2): 5 of the 8 cpus; the second
	// cluster's 5 must wait.
	first, second := rayCluster(ns, "first", 2), rayCluster(ns, "second", 2)
	mustCreate(t, first)
	mustCreate(t, second)
	waitFor(t, "the first cluster admitted and started where its quota is", func(ctx context.Context) error {
		wl, err := rayClusterWorkload(ctx, first)
		if err != nil {
			return err
		}
		if err := admitted(wl); err != nil {
			return err
		}
		cur := &rayv1.RayCluster{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(first), cur); err != nil {
			return err
		}
		flavor := string(wl.Status.Admission.PodSetAssignments[0].Flavors[corev1.ResourceCPU])
		if ptr.Deref(cur.Spec.Suspend, false) || cur.Spec.WorkerGroupSpecs[0].Template.Spec.NodeSelector["pool"] != flavor {
			return fmt.Errorf("suspended %v, workers' node selector %v", ptr.Deref(cur.Spec.Suspend, false), cur.Spec.WorkerGroupSpecs[0].Template.Spec.NodeSelector)
		}
		return nil
	})
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error { return usageIs(cq, "5", "0") })
	waitFor(t, "the second cluster waiting, suspended", func(ctx context.Context) error {
		wl, err := rayClusterWorkload(ctx, second)
		if err != nil {
			return err
		}
		if err := pendingWith("needs 4 cpu, 3 available (nominal 8, in use 5)")(wl); err != nil {
			return err
		}
		cur := &rayv1.RayCluster{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(second), cur); err != nil {
			return err
		}
		if !ptr.Deref(cur.Spec.Suspend, false) {
			return fmt.Errorf("the waiting cluster is not suspended")
		}
		return nil
	})
	waitUpdateRefused(t, "starting the waiting cluster", second, func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) }, "spec.suspend")
	waitUpdateRefused(t, "growing the admitted cluster's workers", first, func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
	}, "spec.workerGroupSpecs[0].replicas")

	// A RayCluster serves until it is deleted, and holds its quota until
	// then; its Workload goes with it (the garbage collector's part, which
	// this API server does not run, is played here).
	firstWl, err := rayClusterWorkload(ctxFor(t), first)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Client.Delete(ctxFor(t), first); err != nil {
		t.Fatal(err)
	}
	if err := server.Client.Delete(ctxFor(t), firstWl); err != nil {
		t.Fatalf("playing the garbage collector: %v", err)
	}
	waitFor(t, "the second cluster admitted once the first is deleted", func(ctx context.Context) error {
		wl, err := rayClusterWorkload(ctx, second)
		if err != nil {
			return err
		}
		return admitted(wl)
	})
}

// TestRayJobsOwnClusterRunsOnItsQuota does what KubeRay does for an
// admitted RayJob: it names the cluster in the RayJob's status, then
// creates it with the RayJob's labels and spec, controlled by the RayJob.
// That cluster runs on the RayJob's Workload; a second one that names the
// RayJob as its controller too is queued on its own.
func TestRayJobsOwnClusterRunsOnItsQuota(t *testing.T) {
	ns, cqName := rayQueueSetup(t, "8")
	rj := rayJob(ns, "train", 2)
	mustCreate(t, rj)
	waitFor(t, "the RayJob admitted and started", func(ctx context.Context) error {
		w, err := rayJobWorkload(ctx, rj)
		if err != nil {
			return err
		}
		if err := admitted(w); err != nil {
			return err
		}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(rj), rj); err != nil {
			return err
		}
		if rj.Spec.Suspend {
			return fmt.Errorf("still suspended")
		}
		return nil
	})
	rj.Status.RayClusterName = "train-x7k2p"
	if err := server.Client.Status().Update(ctxFor(t), rj); err != nil {
		t.Fatal(err)
	}
	clusterOf := func(name string) *rayv1.RayCluster {
		rc := &rayv1.RayCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: rj.Labels},
			Spec:       *rj.Spec.RayClusterSpec.DeepCopy(),
		}
		rc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rj, rayv1.GroupVersion.WithKind("RayJob"))}
		return rc
	}
	own, forged := clusterOf(rj.Status.RayClusterName), clusterOf("train-extra")
	mustCreate(t, own)
	mustCreate(t, forged)
	// The forged cluster is queued (5 cpus, 2500m free): once its Workload
	// waits, the reconciler has judged the RayJob's own, created before it.
	waitFor(t, "the forged cluster held in the queue", func(ctx context.Context) error {
		wl, err := rayClusterWorkload(ctx, forged)
		if err != nil {
			return err
		}
		return pendingWith("needs 4 cpu, 2500m available (nominal 8, in use 5500m)")(wl)
	})
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(own), own); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(own.Spec.Suspend, false) {
		t.Error("the RayJob's own cluster was suspended")
	}
	if _, err := rayClusterWorkload(ctxFor(t), own); err == nil {
		t.Error("the RayJob's own cluster has a Workload of its own: its quota would count twice")
	}
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error { return usageIs(cq, "5500m", "0") })

	waitUpdateRefused(t, "growing the workers of the RayJob's cluster", own, func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](6)
	}, "spec.workerGroupSpecs[0].replicas")
	waitUpdateRefused(t, "taking the queue label off the RayJob's cluster", own, func(rc *rayv1.RayCluster) {
		delete(rc.Labels, berthv1alpha1.QueueNameLabel)
	}, "metadata.labels[berth.dev/queue-name]")
}
