package raycluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

func template(cpu string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray", Image: "rayproject/ray:2.9",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}}}}
}

func group(name string, replicas int32) rayv1.WorkerGroupSpec {
	return rayv1.WorkerGroupSpec{GroupName: name, Replicas: ptr.To(replicas), NumOfHosts: 1, Template: template("2")}
}

func rayCluster(groups ...rayv1.WorkerGroupSpec) *RayCluster {
	return &RayCluster{Spec: rayv1.RayClusterSpec{
		Suspend:          ptr.To(true),
		HeadGroupSpec:    rayv1.HeadGroupSpec{Template: template("1")},
		WorkerGroupSpecs: groups,
	}}
}

func TestPodSets(t *testing.T) {
	c := rayCluster(group("gpu", 4), group("cpu", 2))
	podSets, err := c.PodSets()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, ps := range podSets {
		got[ps.Name] = ps.Count
	}
	if diff := cmp.Diff(map[string]int32{"head": 1, "gpu": 4, "cpu": 2}, got); diff != "" {
		t.Errorf("podset counts (-want +got):\n%s", diff)
	}
	if count, tmpl := c.PodSetPaths("cpu"); count.String() != "spec.workerGroupSpecs[1].replicas" || tmpl.String() != "spec.workerGroupSpecs[1].template" {
		t.Errorf("PodSetPaths(cpu) = %s, %s", count, tmpl)
	}
	if _, tmpl := c.PodSetPaths("head"); tmpl.String() != "spec.headGroupSpec.template" {
		t.Errorf("PodSetPaths(head) template = %s", tmpl)
	}
	if n := len(c.PodSpecs()); n != 3 {
		t.Errorf("PodSpecs() has %d specs, want 3", n)
	}
}

func TestPodSetsRefuseWhatBerthCannotBound(t *testing.T) {
	cases := map[string]struct {
		edit  func(*RayCluster)
		field string
	}{
		"Ray's autoscaler": {
			edit:  func(c *RayCluster) { c.Spec.EnableInTreeAutoscaling = ptr.To(true) },
			field: "spec.enableInTreeAutoscaling",
		},
		"a group named as the head's podset": {
			edit:  func(c *RayCluster) { c.Spec.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{group("head", 1)} },
			field: "spec.workerGroupSpecs[0].groupName",
		},
		"two groups of one name": {
			edit: func(c *RayCluster) {
				c.Spec.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{group("gpu", 1), group("gpu", 2)}
			},
			field: "spec.workerGroupSpecs[1].groupName",
		},
		"more worker groups than podsets": {
			edit: func(c *RayCluster) {
				for i := range 8 {
					c.Spec.WorkerGroupSpecs = append(c.Spec.WorkerGroupSpecs, group(string(rune('a'+i)), 1))
				}
			},
			field: "spec.workerGroupSpecs",
		},
		"a head without containers": {
			edit:  func(c *RayCluster) { c.Spec.HeadGroupSpec.Template.Spec.Containers = nil },
			field: "spec.headGroupSpec.template.spec.containers",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := rayCluster(group("w", 1))
			tc.edit(c)
			if _, err := c.PodSets(); err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Errorf("PodSets() error %v, want one naming %s", err, tc.field)
			}
		})
	}
	seven := rayCluster()
	for i := range 7 {
		seven.Spec.WorkerGroupSpecs = append(seven.Spec.WorkerGroupSpecs, group(string(rune('a'+i)), 1))
	}
	if _, err := seven.PodSets(); err != nil {
		t.Errorf("seven worker groups and the head fill a Workload's eight podsets, refused: %v", err)
	}
}

func TestRunAndRestore(t *testing.T) {
	c := rayCluster(group("w", 2))
	original := c.Spec.DeepCopy()
	info := func(pool string) jobframework.PodSetInfo {
		return jobframework.PodSetInfo{NodeSelector: map[string]string{"pool": pool}}
	}
	if err := c.RunWithPodSetsInfo([]jobframework.PodSetInfo{info("a"), info("b")}); err != nil {
		t.Fatal(err)
	}
	got := []string{c.Spec.HeadGroupSpec.Template.Spec.NodeSelector["pool"], c.Spec.WorkerGroupSpecs[0].Template.Spec.NodeSelector["pool"]}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" || c.IsSuspended() {
		t.Errorf("node selectors of head, workers (-want +got):\n%s; suspended %v", diff, c.IsSuspended())
	}
	if err := c.RunWithPodSetsInfo([]jobframework.PodSetInfo{info("a")}); err == nil {
		t.Error("RunWithPodSetsInfo took 1 podset for 2")
	}
	c.Suspend()
	if !c.RestorePodSetsInfo([]jobframework.PodSetInfo{{}, {}}) {
		t.Error("RestorePodSetsInfo changed nothing")
	}
	if diff := cmp.Diff(original, &c.Spec); diff != "" {
		t.Errorf("spec after restore (-original +got):\n%s", diff)
	}
}

func TestFinishedAndReady(t *testing.T) {
	c := rayCluster()
	c.Status.State = rayv1.Ready //nolint:staticcheck // what an older KubeRay writes
	if finished, _, _ := c.Finished(); finished || !c.PodsReady() {
		t.Errorf("a ready cluster: Finished() = %v, PodsReady() = %v; want false, true", finished, c.PodsReady())
	}
	c.Status.Conditions = []metav1.Condition{{Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionFalse}}
	if c.PodsReady() {
		t.Error("PodsReady() with RayClusterProvisioned False")
	}
}

func TestRayJobsClusterKeepsItsQueueLabel(t *testing.T) {
	owned := func(queue string, suspended bool) *RayCluster {
		c := rayCluster(group("w", 1))
		c.Spec.Suspend = ptr.To(suspended)
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "train", UID: "u1", Controller: ptr.To(true)}}
		if queue != "" {
			c.Labels = map[string]string{berthv1alpha1.QueueNameLabel: queue}
		}
		return c
	}
	if errs := owned("", false).ValidateOnUpdate(owned("team-a", false)); len(errs) != 1 || errs[0].Field != "metadata.labels[berth.dev/queue-name]" {
		t.Errorf("removing the label of a RayJob's running cluster: %v, want it refused", errs)
	}
	if errs := owned("team-b", false).ValidateOnUpdate(owned("team-a", false)); len(errs) != 1 {
		t.Errorf("changing the label of a RayJob's running cluster: %v, want it refused", errs)
	}
	if errs := owned("", true).ValidateOnUpdate(owned("team-a", true)); len(errs) != 0 {
		t.Errorf("a suspended cluster is its own job's, with the usual rules: %v", errs)
	}
	mine := rayCluster(group("w", 1))
	was := rayCluster(group("w", 1))
	was.Labels = map[string]string{berthv1alpha1.QueueNameLabel: "team-a"}
	if errs := mine.ValidateOnUpdate(was); len(errs) != 0 {
		t.Errorf("a cluster of no RayJob: %v", errs)
	}
}
