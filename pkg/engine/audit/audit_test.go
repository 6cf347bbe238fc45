package audit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// found is the part of a report a test compares.
type found struct {
	ClusterQueue                   string
	Admitted, Running, Unaccounted resources.Requests
	Findings                       []foundFinding
}

type foundFinding struct {
	Reason, Workload string
	AdmittedPods     int32
	Pods             []string
}

func summary(r Report) []found {
	var out []found
	for _, cq := range r.ClusterQueues {
		s := found{ClusterQueue: cq.Name, Admitted: cq.Admitted, Running: cq.Running, Unaccounted: cq.Unaccounted}
		for _, f := range cq.Findings {
			ff := foundFinding{Reason: f.Reason, AdmittedPods: f.AdmittedPods}
			if f.Workload != nil {
				ff.Workload = f.Workload.Name
			}
			for _, p := range f.Pods {
				ff.Pods = append(ff.Pods, p.Namespace+"/"+p.Name+"@"+p.Node)
			}
			s.Findings = append(s.Findings, ff)
		}
		out = append(out, s)
	}
	return out
}

// admittedJob is Workload "train" in namespace a, owned by the Job of UID
// job-uid, admitted in team-a for count pods of cpu each.
func admittedJob(count int32, cpu string) *berthv1alpha1.Workload {
	wl := utiltesting.MakeWorkload("train", "a").Queue("main").Request(count, "cpu", cpu).AdmittedIn("team-a", "default").Obj()
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job-uid", Controller: ptr.To(true)}}
	return wl
}

// jobPod is a pod of the Job of admittedJob, labelled as Berth labels it.
func jobPod(name, cpu string) *utiltesting.PodWrapper {
	return utiltesting.MakePod(name, "a").Label(berthv1alpha1.WorkloadLabel, "train").
		OwnedBy("batch/v1", "Job", "train", "job-uid").Request(corev1.ResourceCPU, cpu).Bound("node-1")
}

func TestCompare(t *testing.T) {
	lqs := []*berthv1alpha1.LocalQueue{utiltesting.MakeLocalQueue("main", "a", "team-a"), utiltesting.MakeLocalQueue("main", "b", "team-b")}
	cpu := func(v int64) resources.Requests { return resources.Requests{corev1.ResourceCPU: v} }
	cases := map[string]struct {
		workloads []*berthv1alpha1.Workload
		pods      []*corev1.Pod
		managed   func(string) bool
		want      []found
	}{
		"what runs is what was admitted": {
			workloads: []*berthv1alpha1.Workload{admittedJob(2, "1")},
			pods:      []*corev1.Pod{jobPod("p0", "1").Obj(), jobPod("p1", "1").Obj()},
		},
		"more pods than admitted": {
			workloads: []*berthv1alpha1.Workload{admittedJob(1, "1")},
			pods:      []*corev1.Pod{jobPod("p0", "1").Obj(), jobPod("p1", "1").Obj(), jobPod("p2", "1").Bound("node-2").Obj()},
			want: []found{{ClusterQueue: "team-a", Admitted: cpu(1000), Running: cpu(3000), Unaccounted: cpu(2000), Findings: []foundFinding{
				{Reason: ReasonBeyondAdmission, Workload: "train", AdmittedPods: 1, Pods: []string{"a/p0@node-1", "a/p1@node-1", "a/p2@node-2"}},
			}}},
		},
		"bigger pods than admitted": {
			workloads: []*berthv1alpha1.Workload{admittedJob(2, "1")},
			pods:      []*corev1.Pod{jobPod("p0", "1500m").Obj(), jobPod("p1", "1").Obj()},
			want: []found{{ClusterQueue: "team-a", Admitted: cpu(2000), Running: cpu(2500), Unaccounted: cpu(500), Findings: []foundFinding{
				{Reason: ReasonBeyondAdmission, Workload: "train", AdmittedPods: 2, Pods: []string{"a/p0@node-1", "a/p1@node-1"}},
			}}},
		},
		"a queue-labelled pod with no workload, counted whole in its LocalQueue's ClusterQueue": {
			pods: []*corev1.Pod{utiltesting.MakePod("rogue", "b").Queue("main").Request(corev1.ResourceCPU, "2").Request(corev1.ResourceMemory, "1Gi").Bound("node-1").Obj()},
			want: []found{{ClusterQueue: "team-b", Admitted: resources.Requests{}, Running: resources.Requests{corev1.ResourceCPU: 2000, corev1.ResourceMemory: 1 << 30},
				Unaccounted: resources.Requests{corev1.ResourceCPU: 2000, corev1.ResourceMemory: 1 << 30}, Findings: []foundFinding{
					{Reason: ReasonNoWorkload, Pods: []string{"b/rogue@node-1"}},
				}}},
		},
		"a pod whose workload holds no quota": {
			workloads: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("train", "a").Queue("main").Request(1, "cpu", "1").Obj()},
			pods:      []*corev1.Pod{jobPod("p0", "1").Obj()},
			want: []found{{ClusterQueue: "team-a", Admitted: resources.Requests{}, Running: cpu(1000), Unaccounted: cpu(1000), Findings: []foundFinding{
				{Reason: ReasonWorkloadNotAdmitted, Workload: "train", Pods: []string{"a/p0@node-1"}},
			}}},
		},
		"terminated pods are not counted": {
			workloads: []*berthv1alpha1.Workload{admittedJob(1, "1")},
			pods: []*corev1.Pod{jobPod("p0", "1").Obj(), jobPod("done", "1").Phase(corev1.PodSucceeded).Obj(), jobPod("crashed", "1").Phase(corev1.PodFailed).Obj(),
				utiltesting.MakePod("rogue", "b").Queue("main").Request(corev1.ResourceCPU, "1").Bound("node-1").Phase(corev1.PodSucceeded).Obj()},
		},
		"unbound pods are not counted": {
			workloads: []*berthv1alpha1.Workload{admittedJob(1, "1")},
			pods: []*corev1.Pod{jobPod("p0", "1").Obj(), jobPod("pending", "1").Bound("").Obj(),
				utiltesting.MakePod("gated", "b").Queue("main").Request(corev1.ResourceCPU, "1").Gated().Obj()},
		},
		"a terminating pod still runs": {
			workloads: []*berthv1alpha1.Workload{admittedJob(1, "1")},
			pods: []*corev1.Pod{jobPod("p0", "1").Obj(), func() *corev1.Pod {
				p := jobPod("leaving", "1").Phase(corev1.PodRunning).Obj()
				p.DeletionTimestamp = &metav1.Time{}
				return p
			}()},
			want: []found{{ClusterQueue: "team-a", Admitted: cpu(1000), Running: cpu(2000), Unaccounted: cpu(1000), Findings: []foundFinding{
				{Reason: ReasonBeyondAdmission, Workload: "train", AdmittedPods: 1, Pods: []string{"a/leaving@node-1", "a/p0@node-1"}},
			}}},
		},
		"sums saturate instead of wrapping": {
			workloads: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("train", "a").Queue("main").Request(1, "nvidia.com/gpu", "1").AdmittedIn("team-a", "default").Obj()},
			pods: []*corev1.Pod{
				utiltesting.MakePod("p0", "a").Label(berthv1alpha1.WorkloadLabel, "train").Request("nvidia.com/gpu", "5E").Bound("node-1").Obj(),
				utiltesting.MakePod("p1", "a").Label(berthv1alpha1.WorkloadLabel, "train").Request("nvidia.com/gpu", "5E").Bound("node-1").Obj(),
				utiltesting.MakePod("rogue", "a").Queue("main").Request("nvidia.com/gpu", "5E").Bound("node-1").Obj(),
			},
			want: []found{{ClusterQueue: "team-a", Admitted: resources.Requests{"nvidia.com/gpu": 1}, Running: resources.Requests{"nvidia.com/gpu": resources.Max},
				Unaccounted: resources.Requests{"nvidia.com/gpu": resources.Max}, Findings: []foundFinding{
					{Reason: ReasonBeyondAdmission, Workload: "train", AdmittedPods: 1, Pods: []string{"a/p0@node-1", "a/p1@node-1"}},
					{Reason: ReasonNoWorkload, Pods: []string{"a/rogue@node-1"}},
				}}},
		},
		"owner references prove a pod's workload without its label": {
			workloads: []*berthv1alpha1.Workload{admittedJob(1, "1")},
			pods: []*corev1.Pod{jobPod("p0", "1").Obj(), utiltesting.MakePod("unlabelled", "a").Queue("main").
				OwnedBy("batch/v1", "Job", "train", "job-uid").Request(corev1.ResourceCPU, "1").Bound("node-1").Obj()},
			want: []found{{ClusterQueue: "team-a", Admitted: cpu(1000), Running: cpu(2000), Unaccounted: cpu(1000), Findings: []foundFinding{
				{Reason: ReasonBeyondAdmission, Workload: "train", AdmittedPods: 1, Pods: []string{"a/p0@node-1", "a/unlabelled@node-1"}},
			}}},
		},
		"a plain pod owns its workload": {
			workloads: []*berthv1alpha1.Workload{func() *berthv1alpha1.Workload {
				wl := utiltesting.MakeWorkload("pod-serve", "a").Queue("main").Request(1, "cpu", "1").AdmittedIn("team-a", "default").Obj()
				wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "serve", UID: "pod-uid"}}
				return wl
			}()},
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := utiltesting.MakePod("serve", "a").Queue("main").Request(corev1.ResourceCPU, "1").Bound("node-1").Obj()
				p.UID = "pod-uid"
				return p
			}()},
		},
		"an owner of two admitted workloads proves nothing: the labels decide": {
			workloads: []*berthv1alpha1.Workload{admittedJob(1, "1"), func() *berthv1alpha1.Workload {
				wl := admittedJob(1, "1")
				wl.Name = "other"
				return wl
			}()},
			pods: []*corev1.Pod{jobPod("p0", "1").Obj(), jobPod("p1", "1").Label(berthv1alpha1.WorkloadLabel, "other").Obj()},
		},
		"resources the ClusterQueue does not cover are not compared": {
			workloads: []*berthv1alpha1.Workload{func() *berthv1alpha1.Workload {
				wl := admittedJob(1, "1")
				wl.Status.Admission.PodSetAssignments[0].ResourceUsage[corev1.ResourceMemory] = resource.MustParse("1")
				return wl
			}()},
			pods: []*corev1.Pod{jobPod("p0", "1").Request(corev1.ResourceMemory, "1Gi").Obj()},
		},
		"a pod naming an unknown LocalQueue is left out": {
			pods: []*corev1.Pod{utiltesting.MakePod("rogue", "a").Queue("nope").Request(corev1.ResourceCPU, "1").Bound("node-1").Obj()},
		},
		"a queue-labelled pod in a namespace Berth does not manage is not Berth's": {
			pods:    []*corev1.Pod{utiltesting.MakePod("rogue", "b").Queue("main").Request(corev1.ResourceCPU, "1").Bound("node-1").Obj()},
			managed: func(ns string) bool { return ns != "b" },
		},
		"a finished workload holds no quota": {
			workloads: []*berthv1alpha1.Workload{utiltesting.MakeWorkload("train", "a").Queue("main").Request(1, "cpu", "1").AdmittedIn("team-a", "default").
				Condition(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, berthv1alpha1.ReasonSucceeded, 0).Obj()},
			pods: []*corev1.Pod{jobPod("p0", "1").Obj()},
			want: []found{{ClusterQueue: "team-a", Admitted: resources.Requests{}, Running: cpu(1000), Unaccounted: cpu(1000), Findings: []foundFinding{
				{Reason: ReasonWorkloadNotAdmitted, Workload: "train", Pods: []string{"a/p0@node-1"}},
			}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Compare(Input{Pods: tc.pods, Workloads: tc.workloads, LocalQueues: lqs, Managed: tc.managed})
			if diff := cmp.Diff(tc.want, summary(got)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	wl := admittedJob(1, "1")
	cases := map[string]struct {
		pods []*corev1.Pod
		want string
	}{
		"beyond admission": {
			pods: []*corev1.Pod{jobPod("p0", "1").Obj(), jobPod("p1", "1").Bound("node-2").Obj()},
			want: "2 pods of Workload train use 2 cpu, beyond the 1 cpu that its admission in ClusterQueue team-a holds for 1 pod: p0 on node-1, p1 on node-2",
		},
		"no workload": {
			pods: []*corev1.Pod{utiltesting.MakePod("rogue", "a").Queue("main").Request(corev1.ResourceCPU, "500m").Request(corev1.ResourceMemory, "1Gi").Bound("node-1").Obj()},
			want: "Pod rogue runs on node node-1 using 500m cpu, 1Gi memory with no Workload: ClusterQueue team-a (LocalQueue main) does not count it",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := Compare(Input{Pods: tc.pods, Workloads: []*berthv1alpha1.Workload{wl},
				LocalQueues: []*berthv1alpha1.LocalQueue{utiltesting.MakeLocalQueue("main", "a", "team-a")}})
			if len(r.ClusterQueues) != 1 || len(r.ClusterQueues[0].Findings) != 1 {
				t.Fatalf("found %+v, want one finding", summary(r))
			}
			if diff := cmp.Diff(tc.want, r.ClusterQueues[0].Findings[0].Message()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessageNamesTenPods(t *testing.T) {
	f := Finding{Reason: ReasonBeyondAdmission, Workload: admittedJob(1, "1"), ClusterQueue: "team-a", AdmittedPods: 1,
		Admitted: resources.Requests{corev1.ResourceCPU: 1000}, Running: resources.Requests{corev1.ResourceCPU: 12000}}
	for i := range 12 {
		f.Pods = append(f.Pods, Pod{Namespace: "a", Name: string(rune('a' + i)), UID: types.UID(rune('a' + i)), Node: "n"})
	}
	want := "12 pods of Workload train use 12 cpu, beyond the 1 cpu that its admission in ClusterQueue team-a holds for 1 pod: " +
		"a on n, b on n, c on n, d on n, e on n, f on n, g on n, h on n, i on n, j on n, and 2 more"
	if diff := cmp.Diff(want, f.Message()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

// TestMemo checks that a Memo answers from what it remembers while a pod
// keeps its resourceVersion, computes again when it changes, and forgets
// a pod that an audit did not see.
func TestMemo(t *testing.T) {
	memo := NewMemo()
	pod := jobPod("p0", "1").Obj()
	pod.UID, pod.ResourceVersion = "p0", "1"
	wl := admittedJob(1, "1")
	wl.UID, wl.ResourceVersion = "train", "1"
	audit := func() []found {
		return summary(Compare(Input{Pods: []*corev1.Pod{pod}, Workloads: []*berthv1alpha1.Workload{wl}, Memo: memo}))
	}
	if got := audit(); got != nil {
		t.Fatalf("found %v, want nothing", got)
	}
	// The pod's requests as the memo knows them, since its version is the
	// same: never so in a cluster, where every change makes a new version.
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	if got := audit(); got != nil {
		t.Errorf("with the same resourceVersion, found %v, want what the memo knew (nothing)", got)
	}
	pod.ResourceVersion = "2"
	if got := audit(); len(got) != 1 {
		t.Errorf("with a new resourceVersion, found %v, want the bigger pod", got)
	}
	Compare(Input{Workloads: []*berthv1alpha1.Workload{wl}, Memo: memo})
	if n := len(memo.pods); n != 0 {
		t.Errorf("after an audit without the pod, the memo knows %d pods, want 0", n)
	}
}
