package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/test/util/apiserver"
)

func rayTemplate(cpu string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray", Image: "rayproject/ray:2.41.0",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}}}}
}

// rayJob is a RayJob in ns on LocalQueue main: a head of one cpu and a
// worker group of workers pods of two cpus each.
func rayJob(ns, name string, workers int32) *rayv1.RayJob {
	return &rayv1.RayJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}},
		Spec: rayv1.RayJobSpec{
			Entrypoint:               "python train.py",
			ShutdownAfterJobFinishes: true,
			RayClusterSpec: &rayv1.RayClusterSpec{
				HeadGroupSpec: rayv1.HeadGroupSpec{RayStartParams: map[string]string{}, Template: rayTemplate("1")},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
					GroupName: "workers", Replicas: ptr.To(workers), MinReplicas: ptr.To[int32](0), MaxReplicas: ptr.To[int32](8),
					NumOfHosts: 1, RayStartParams: map[string]string{}, Template: rayTemplate("2"),
				}},
			},
		},
	}
}

func rayJobWorkload(ctx context.Context, rj *rayv1.RayJob) (*berthv1alpha1.Workload, error) {
	return jobWorkload(ctx, rj.DeepCopy(), rayv1.GroupVersion.WithKind("RayJob"))
}

// rayQueueSetup is queueSetup with memory beside the cpus: KubeRay's own
// submitter pod asks for both.
func rayQueueSetup(t *testing.T, cpu string) (string, string) {
	t.Helper()
	flavor := unique("flavor")
	rf := utiltesting.MakeResourceFlavor(flavor)
	rf.Spec.NodeLabels = map[string]string{"pool": flavor}
	cq := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).Resource("cpu", cpu).Resource("memory", "64Gi").Obj())
	ns := namespace(t, nil)
	mustCreate(t, rf, cq.Obj(), utiltesting.MakeLocalQueue("main", ns, cq.Name))
	return ns, cq.Name
}

func TestRayJobAdmittedAsOneWorkload(t *testing.T) {
	ns, cqName := rayQueueSetup(t, "8")
	first := rayJob(ns, "first", 2)
	mustCreate(t, first)
	// The head (1), the workers (2 x 2) and KubeRay's submitter (500m):
	// 5.5 of the 8 cpus; the second RayJob's 3 more must wait.
	second := rayJob(ns, "second", 1)
	mustCreate(t, second)

	var wl *berthv1alpha1.Workload
	waitFor(t, "the first RayJob's workload admitted", func(ctx context.Context) (err error) {
		if wl, err = rayJobWorkload(ctx, first); err != nil {
			return err
		}
		return admitted(wl)
	})
	counts := map[string]int32{}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		counts[psa.Name] = ptr.Deref(psa.Count, 0)
	}
	if diff := cmp.Diff(map[string]int32{"head": 1, "workers": 2, "submitter": 1}, counts); diff != "" {
		t.Errorf("admitted podsets (-want +got):\n%s", diff)
	}
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		return usageIs(cq, "5500m", "0")
	})
	waitHeldAndUnstartable(t, second)

	running := &rayv1.RayJob{}
	waitFor(t, "the first RayJob running where its quota is", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(first), running); err != nil {
			return err
		}
		if running.Spec.Suspend {
			return fmt.Errorf("still suspended")
		}
		return nil
	})
	flavor := string(wl.Status.Admission.PodSetAssignments[0].Flavors[corev1.ResourceCPU])
	templates := map[string]*corev1.PodTemplateSpec{
		"head": &running.Spec.RayClusterSpec.HeadGroupSpec.Template, "workers": &running.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template,
		"submitter": running.Spec.SubmitterPodTemplate,
	}
	for name, tmpl := range templates {
		if tmpl == nil {
			t.Errorf("%s: no template", name)
			continue
		}
		if got := tmpl.Spec.NodeSelector["pool"]; got != flavor || tmpl.Labels[berthv1alpha1.PodSetLabel] != name {
			t.Errorf("%s: node selector pool=%q, podset label %q; want %q and %q", name, got, tmpl.Labels[berthv1alpha1.PodSetLabel], flavor, name)
		}
	}

	// KubeRay reports the Ray job done: the quota goes to the second.
	waitFor(t, "completing the first RayJob", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(first), running); err != nil {
			return err
		}
		running.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusComplete
		running.Status.JobStatus = rayv1.JobStatusSucceeded
		return server.Client.Status().Update(ctx, running)
	})
	waitFor(t, "the first workload finished and the second admitted", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("first not finished: %v", wl.Status.Conditions)
		}
		w, err := rayJobWorkload(ctx, second)
		if err != nil {
			return err
		}
		return admitted(w)
	})
}

// waitHeldAndUnstartable waits until rj waits for quota, suspended, and
// checks that its owner cannot start it around the queue.
func waitHeldAndUnstartable(t *testing.T, rj *rayv1.RayJob) {
	t.Helper()
	waitFor(t, "the RayJob waiting, held", func(ctx context.Context) error {
		w, err := rayJobWorkload(ctx, rj)
		if err != nil {
			return err
		}
		if err := pendingWith("podset workers: flavor ")(w); err != nil {
			return err
		}
		if err := pendingWith("needs 2 cpu, 2500m available (nominal 8, in use 5500m)")(w); err != nil {
			return err
		}
		cur := &rayv1.RayJob{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(rj), cur); err != nil {
			return err
		}
		if !cur.Spec.Suspend {
			return fmt.Errorf("the waiting RayJob is not suspended")
		}
		return nil
	})

	waitUpdateRefused(t, "starting the waiting RayJob", rj, func(rj *rayv1.RayJob) { rj.Spec.Suspend = false }, "spec.suspend")
}

func TestRayJobThatBerthCannotBoundIsRefused(t *testing.T) {
	ns, _ := rayQueueSetup(t, "8")
	autoscaled := rayJob(ns, "autoscaled", 1)
	autoscaled.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
	err := server.Client.Create(ctxFor(t), autoscaled)
	if err == nil || !strings.Contains(err.Error(), "spec.rayClusterSpec.enableInTreeAutoscaling") {
		t.Errorf("creating an autoscaled RayJob: %v, want a refusal naming spec.rayClusterSpec.enableInTreeAutoscaling", err)
	}

	// A user may not grow the workers of a RayJob that holds quota.
	rj := rayJob(ns, "held", 1)
	mustCreate(t, rj)
	waitFor(t, "the RayJob admitted", func(ctx context.Context) error {
		w, err := rayJobWorkload(ctx, rj)
		if err != nil {
			return err
		}
		return admitted(w)
	})
	waitUpdateRefused(t, "growing its workers", rj, func(rj *rayv1.RayJob) {
		rj.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4)
	}, "spec.rayClusterSpec.workerGroupSpecs[0].replicas")
}

// TestRaySamplesAreAdmitted creates config/samples/ray's RayJob and
// RayClusters (the elastic one's workers gated by the webhook), each in a namespace of its own on a queue with room for it:
// the samples are what the CRDs accept and Berth admits whole.
func TestRaySamplesAreAdmitted(t *testing.T) {
	samples := map[string]struct {
		obj      client.Object
		workload func(context.Context, client.Object) (*berthv1alpha1.Workload, error)
		// cpu is what it asks for: the head's 1 cpu and the workers' 2 x 4,
		// and the RayJob's submitter's 500m.
		cpu string
	}{
		"rayjob.yaml": {obj: &rayv1.RayJob{}, cpu: "9500m",
			workload: func(ctx context.Context, o client.Object) (*berthv1alpha1.Workload, error) {
				return rayJobWorkload(ctx, o.(*rayv1.RayJob))
			}},
		"raycluster.yaml": {obj: &rayv1.RayCluster{}, cpu: "9",
			workload: func(ctx context.Context, o client.Object) (*berthv1alpha1.Workload, error) {
				return rayClusterWorkload(ctx, o.(*rayv1.RayCluster))
			}},
		"raycluster-elastic.yaml": {obj: &rayv1.RayCluster{}, cpu: "9",
			workload: func(ctx context.Context, o client.Object) (*berthv1alpha1.Workload, error) {
				return rayClusterWorkload(ctx, o.(*rayv1.RayCluster))
			}},
	}
	for file, sample := range samples {
		t.Run(file, func(t *testing.T) {
			flavor := unique("flavor")
			cq := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).
				Resource("cpu", "16").Resource("memory", "64Gi").Resource("nvidia.com/gpu", "2").Obj())
			ns := namespace(t, nil)
			mustCreate(t, utiltesting.MakeResourceFlavor(flavor), cq.Obj(), utiltesting.MakeLocalQueue("training", ns, cq.Name))
			raw, err := os.ReadFile(filepath.Join(apiserver.RepoRoot(), "config", "samples", "ray", file))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(raw, sample.obj); err != nil {
				t.Fatal(err)
			}
			sample.obj.SetNamespace(ns)
			mustCreate(t, sample.obj)
			waitFor(t, "the sample admitted", func(ctx context.Context) error {
				w, err := sample.workload(ctx, sample.obj)
				if err != nil {
					return err
				}
				return admitted(w)
			})
			waitForClusterQueue(t, cq.Name, func(cq *berthv1alpha1.ClusterQueue) error {
				return usageIs(cq, sample.cpu, "0")
			})
		})
	}
}
