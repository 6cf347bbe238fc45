package rayjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/pkg/jobframework"
)

func template(cpu string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray", Image: "rayproject/ray:2.9",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}}}}
}

func group(name string, replicas, lo, hi *int32, hosts int32) rayv1.WorkerGroupSpec {
	return rayv1.WorkerGroupSpec{GroupName: name, Replicas: replicas, MinReplicas: lo, MaxReplicas: hi, NumOfHosts: hosts, Template: template("2")}
}

func rayJob(groups ...rayv1.WorkerGroupSpec) *RayJob {
	return &RayJob{Spec: rayv1.RayJobSpec{Suspend: true, ShutdownAfterJobFinishes: true, RayClusterSpec: &rayv1.RayClusterSpec{
		HeadGroupSpec:    rayv1.HeadGroupSpec{Template: template("1")},
		WorkerGroupSpecs: groups,
	}}}
}

func TestPodSets(t *testing.T) {
	cases := map[string]struct {
		job    *RayJob
		want   map[string]int32
		submit string // the submitter's cpu request, "" for none
	}{
		"head, workers and KubeRay's submitter": {
			job:    rayJob(group("gpu", ptr.To[int32](4), nil, nil, 0)),
			want:   map[string]int32{"head": 1, "gpu": 4, "submitter": 1},
			submit: "500m",
		},
		"replicas within min and max, times the hosts": {
			job: rayJob(
				group("below", ptr.To[int32](1), ptr.To[int32](3), ptr.To[int32](5), 2),
				group("above", ptr.To[int32](9), ptr.To[int32](0), ptr.To[int32](5), 1),
				group("unset", nil, ptr.To[int32](2), nil, 1),
				group("crossed", ptr.To[int32](1), ptr.To[int32](6), ptr.To[int32](4), 1),
			),
			want:   map[string]int32{"head": 1, "below": 6, "above": 5, "unset": 2, "crossed": 4, "submitter": 1},
			submit: "500m",
		},
		"the user's submitter": {
			job: func() *RayJob {
				j := rayJob(group("w", ptr.To[int32](1), nil, nil, 1))
				j.Spec.SubmitterPodTemplate = ptr.To(template("3"))
				return j
			}(),
			want:   map[string]int32{"head": 1, "w": 1, "submitter": 1},
			submit: "3",
		},
		"no submitter pod over HTTP": {
			job: func() *RayJob {
				j := rayJob(group("w", ptr.To[int32](2), nil, nil, 1))
				j.Spec.SubmissionMode = rayv1.HTTPMode
				return j
			}(),
			want: map[string]int32{"head": 1, "w": 2},
		},
		"a count that would overflow saturates": {
			job:    rayJob(group("huge", ptr.To[int32](1<<30), nil, nil, 8)),
			want:   map[string]int32{"head": 1, "huge": 1<<31 - 1, "submitter": 1},
			submit: "500m",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sets, err := tc.job.PodSets()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int32{}
			submit := ""
			for _, ps := range sets {
				got[ps.Name] = ps.Count
				if ps.Name == SubmitterPodSet {
					submit = ps.Template.Spec.Containers[0].Resources.Requests.Cpu().String()
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("podsets (-want +got):\n%s", diff)
			}
			if submit != tc.submit {
				t.Errorf("submitter cpu request %q, want %q", submit, tc.submit)
			}
		})
	}
}

func TestPodSetsRefuseWhatBerthCannotBound(t *testing.T) {
	cases := map[string]struct {
		edit  func(*RayJob)
		field string
	}{
		"an existing cluster": {
			edit: func(j *RayJob) {
				j.Spec.RayClusterSpec, j.Spec.ClusterSelector = nil, map[string]string{"ray.io/cluster": "shared"}
			},
			field: "spec.rayClusterSpec",
		},
		"Ray's autoscaler": {
			edit:  func(j *RayJob) { j.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true) },
			field: "spec.rayClusterSpec.enableInTreeAutoscaling",
		},
		"a cluster kept once finished, which KubeRay does not suspend": {
			edit:  func(j *RayJob) { j.Spec.ShutdownAfterJobFinishes = false },
			field: "spec.shutdownAfterJobFinishes",
		},
		"a sidecar submitter": {
			edit:  func(j *RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode },
			field: "spec.submissionMode",
		},
		"a group name that cannot name a podset": {
			edit: func(j *RayJob) {
				j.Spec.RayClusterSpec.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{group("GPU_workers", ptr.To[int32](1), nil, nil, 1)}
			},
			field: "spec.rayClusterSpec.workerGroupSpecs[0].groupName",
		},
		"a group named as the head's podset": {
			edit: func(j *RayJob) {
				j.Spec.RayClusterSpec.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{group("gpu", ptr.To[int32](1), nil, nil, 1), group("head", ptr.To[int32](1), nil, nil, 1)}
			},
			field: "spec.rayClusterSpec.workerGroupSpecs[1].groupName",
		},
		"more worker groups than podsets": {
			edit: func(j *RayJob) {
				for i := range 7 {
					j.Spec.RayClusterSpec.WorkerGroupSpecs = append(j.Spec.RayClusterSpec.WorkerGroupSpecs, group(string(rune('a'+i)), ptr.To[int32](1), nil, nil, 1))
				}
			},
			field: "spec.rayClusterSpec.workerGroupSpecs",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := rayJob()
			tc.edit(j)
			if _, err := j.PodSets(); err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Errorf("PodSets() error %v, want one naming %s", err, tc.field)
			}
		})
	}
}

func TestRunAndRestore(t *testing.T) {
	j := rayJob(group("w", ptr.To[int32](2), nil, nil, 1))
	original := j.Spec.DeepCopy()
	info := func(pool string) jobframework.PodSetInfo {
		return jobframework.PodSetInfo{NodeSelector: map[string]string{"pool": pool}}
	}
	if err := j.RunWithPodSetsInfo([]jobframework.PodSetInfo{info("a"), info("b"), info("c")}); err != nil {
		t.Fatal(err)
	}
	if j.IsSuspended() {
		t.Error("still suspended")
	}
	c := j.Spec.RayClusterSpec
	got := []string{c.HeadGroupSpec.Template.Spec.NodeSelector["pool"], c.WorkerGroupSpecs[0].Template.Spec.NodeSelector["pool"]}
	if j.Spec.SubmitterPodTemplate == nil {
		t.Fatal("no submitter template written: KubeRay's own pod would land anywhere")
	}
	got = append(got, j.Spec.SubmitterPodTemplate.Spec.NodeSelector["pool"])
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("node selectors of head, workers, submitter (-want +got):\n%s", diff)
	}
	if err := j.RunWithPodSetsInfo([]jobframework.PodSetInfo{info("a")}); err == nil {
		t.Error("RunWithPodSetsInfo took 1 podset for 3")
	}

	j.Suspend()
	if !j.RestorePodSetsInfo([]jobframework.PodSetInfo{{}, {}, {}}) {
		t.Error("RestorePodSetsInfo changed nothing")
	}
	if sel := j.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.NodeSelector; len(sel) != 0 || !j.IsSuspended() {
		t.Errorf("after restore: workers' node selector %v, suspended %v", sel, j.IsSuspended())
	}
	if diff := cmp.Diff(original.RayClusterSpec, j.Spec.RayClusterSpec); diff != "" {
		t.Errorf("cluster spec after restore (-original +got):\n%s", diff)
	}
}

// readyByState is the cluster status of a KubeRay that sets no conditions.
func readyByState(conditions ...metav1.Condition) rayv1.RayClusterStatus {
	return rayv1.RayClusterStatus{State: rayv1.Ready, Conditions: conditions} //nolint:staticcheck // what an older KubeRay writes
}

func TestFinishedAndReady(t *testing.T) {
	cases := map[string]struct {
		status              rayv1.RayJobStatus
		finished, succeeded bool
		ready               bool
	}{
		"running":   {status: rayv1.RayJobStatus{JobDeploymentStatus: rayv1.JobDeploymentStatusRunning, RayClusterStatus: readyByState()}, ready: true},
		"succeeded": {status: rayv1.RayJobStatus{JobDeploymentStatus: rayv1.JobDeploymentStatusComplete, JobStatus: rayv1.JobStatusSucceeded}, finished: true, succeeded: true},
		"stopped":   {status: rayv1.RayJobStatus{JobDeploymentStatus: rayv1.JobDeploymentStatusComplete, JobStatus: rayv1.JobStatusStopped}, finished: true},
		"failed":    {status: rayv1.RayJobStatus{JobDeploymentStatus: rayv1.JobDeploymentStatusFailed, Reason: rayv1.DeadlineExceeded}, finished: true},
		"provisioning, by its conditions": {status: rayv1.RayJobStatus{RayClusterStatus: readyByState(
			metav1.Condition{Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionFalse},
		)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := rayJob()
			j.Status = tc.status
			finished, succeeded, _ := j.Finished()
			if finished != tc.finished || succeeded != tc.succeeded || j.PodsReady() != tc.ready {
				t.Errorf("Finished() = %v, %v; PodsReady() = %v; want %v, %v; %v", finished, succeeded, j.PodsReady(), tc.finished, tc.succeeded, tc.ready)
			}
		})
	}
}
