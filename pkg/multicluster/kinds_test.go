package multicluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// managerJob is a manager's Job as the API server returns it: its
// generated selector and the labels that match it.
func managerJob(manual bool) *batchv1.Job {
	labels := map[string]string{batchv1.ControllerUidLabel: "uid-1", batchv1.JobNameLabel: "train", "controller-uid": "uid-1", "job-name": "train", "app": "x"}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "team", UID: "uid-1", ResourceVersion: "7",
			Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}, Annotations: map[string]string{"note": "kept"}},
		Spec: batchv1.JobSpec{
			ManagedBy: ptr.To(berthv1alpha1.MultiClusterControllerName), Suspend: ptr.To(true), ManualSelector: ptr.To(manual),
			Parallelism: ptr.To[int32](4),
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "uid-1"}},
			Template:    corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		},
		Status: batchv1.JobStatus{Active: 2},
	}
}

func TestCopyFor(t *testing.T) {
	wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-train-abc"},
		Status: berthv1alpha1.WorkloadStatus{RequeueState: &berthv1alpha1.RequeueState{Count: ptr.To[int32](2)}}}
	k := kindOf(batchv1.SchemeGroupVersion.WithKind("Job"))
	got := k.copyFor(managerJob(false), wl, "east").(*batchv1.Job)
	want := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "team",
			Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main", berthv1alpha1.MultiClusterOriginLabel: "east"},
			Annotations: map[string]string{"note": "kept", berthv1alpha1.MultiClusterWorkloadAnnotation: "job-train-abc",
				berthv1alpha1.MultiClusterAttemptAnnotation: "2"}},
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true), ManualSelector: ptr.To(false), Parallelism: ptr.To[int32](4),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy (-want +got):\n%s", diff)
	}
	manual := k.copyFor(managerJob(true), wl, "east").(*batchv1.Job)
	if manual.Spec.Selector == nil || len(manual.Spec.Template.Labels) != 5 {
		t.Errorf("a manual selector and its labels must stay: %v %v", manual.Spec.Selector, manual.Spec.Template.Labels)
	}

	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: "team"},
		Spec: jobsetv1alpha2.JobSetSpec{ManagedBy: ptr.To(berthv1alpha1.MultiClusterControllerName)}}
	jsCopy := kindOf(jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet")).copyFor(js, wl, "east").(*jobsetv1alpha2.JobSet)
	if jsCopy.Spec.ManagedBy != nil || !ptr.Deref(jsCopy.Spec.Suspend, false) || jsCopy.Labels[berthv1alpha1.MultiClusterOriginLabel] != "east" {
		t.Errorf("JobSet copy: managedBy %v suspend %v labels %v", jsCopy.Spec.ManagedBy, jsCopy.Spec.Suspend, jsCopy.Labels)
	}
}

func TestMirrorAndClear(t *testing.T) {
	k := kindOf(batchv1.SchemeGroupVersion.WithKind("Job"))
	job, c := managerJob(false), managerJob(false)
	if k.mirror(job, c) {
		t.Error("the same status mirrored again")
	}
	c.Status = batchv1.JobStatus{Active: 4, Ready: ptr.To[int32](4)}
	if !k.mirror(job, c) || job.Status.Active != 4 || ptr.Deref(job.Status.Ready, 0) != 4 {
		t.Errorf("status not mirrored: %+v", job.Status)
	}
	if !k.clear(job) || k.clear(job) {
		t.Error("clear must empty the status once")
	}
}

func TestOwnerOf(t *testing.T) {
	pods := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "a", UID: "1"}, {APIVersion: "v1", Kind: "Pod", Name: "b", UID: "2"}}
	group := map[string]string{berthv1alpha1.PodGroupNameLabel: "g"}
	for name, tc := range map[string]struct {
		refs   []metav1.OwnerReference
		labels map[string]string
		kind   string
		owner  string
	}{
		"job":                 {refs: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "a", Controller: ptr.To(true)}}, kind: "Job", owner: "a"},
		"jobset":              {refs: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "a", Controller: ptr.To(true)}}, kind: "JobSet", owner: "a"},
		"pod":                 {refs: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "a", Controller: ptr.To(true)}}, kind: "Pod", owner: "a"},
		"pod group":           {refs: pods, labels: group, kind: "Pod", owner: "g"},
		"statefulset's group": {refs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "s"}}, labels: group},
		"deployment":          {refs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", Controller: ptr.To(true)}}},
		"none":                {},
	} {
		t.Run(name, func(t *testing.T) {
			k, owner := ownerOf(&metav1.ObjectMeta{OwnerReferences: tc.refs, Labels: tc.labels})
			got := ""
			if k != nil {
				got = k.gvk.Kind
				if k != kindOf(k.gvk) {
					t.Errorf("ownerOf's kind is not the one workers serve")
				}
			}
			if got != tc.kind || owner != tc.owner && tc.kind != "" {
				t.Errorf("kind %q owner %q, want %q %q", got, owner, tc.kind, tc.owner)
			}
		})
	}
}

// managerPod is a pod of a group in the manager, as Berth's webhook and
// the API server's admission left it.
func managerPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-0", Namespace: "team", UID: "uid-p",
			Labels:      map[string]string{berthv1alpha1.QueueNameLabel: "main", berthv1alpha1.PodGroupNameLabel: "g", berthv1alpha1.ManagedLabel: "true"},
			Annotations: map[string]string{berthv1alpha1.PodGroupTotalCountAnnotation: "2", berthv1alpha1.PodGroupRoleAnnotation: "abcd"}},
		Spec: corev1.PodSpec{
			Priority: ptr.To[int32](0), SchedulingGates: []corev1.PodSchedulingGate{{Name: berthv1alpha1.AdmissionGate}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x2k9q"}, {Name: "data"}},
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/data"}, {Name: "kube-api-access-x2k9q", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}},
	}
}

func TestCopyForPod(t *testing.T) {
	wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "pod-group-g-abc"}}
	k := kindOf(corev1.SchemeGroupVersion.WithKind("Pod"))
	got := k.copyFor(managerPod(), wl, "east").(*corev1.Pod)
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-0", Namespace: "team",
			Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main", berthv1alpha1.PodGroupNameLabel: "g", berthv1alpha1.MultiClusterOriginLabel: "east"},
			Annotations: map[string]string{berthv1alpha1.PodGroupTotalCountAnnotation: "2",
				berthv1alpha1.MultiClusterWorkloadAnnotation: "pod-group-g-abc", berthv1alpha1.MultiClusterAttemptAnnotation: "0"}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: berthv1alpha1.AdmissionGate}},
			Volumes:         []corev1.Volume{{Name: "data"}},
			Containers:      []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy (-want +got):\n%s", diff)
	}
	ungated := managerPod()
	ungated.Spec.SchedulingGates = nil
	if c := k.copyFor(ungated, wl, "east").(*corev1.Pod); !gated(c) {
		t.Error("a copy must be held at Berth's gate until the worker's Berth admits it")
	}
	if a, b := k.workloadName(managerPod()), k.workloadName(got); a != b {
		t.Errorf("the group's Workload is %s here and %s in the worker", a, b)
	}
}

func TestMirrorAndClearPod(t *testing.T) {
	k := kindOf(corev1.SchemeGroupVersion.WithKind("Pod"))
	p := managerPod()
	if k.clear(p) {
		t.Error("clearing a held pod's status changed it")
	}
	c := managerPod()
	c.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9", PodIPs: []corev1.PodIP{{IP: "10.0.0.9"}}, HostIP: "10.1.0.1",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true}}}
	if !k.mirror(p, c) || k.mirror(p, c) {
		t.Error("mirror must change the status once")
	}
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "" || p.Status.HostIP != "" || p.Status.QOSClass != corev1.PodQOSBestEffort || len(p.Status.ContainerStatuses) != 1 {
		t.Errorf("mirrored status %+v: want the copy's phase, conditions and containers, not its addresses, and its own QoS class", p.Status)
	}
	if !k.clear(p) || k.clear(p) {
		t.Error("clear must put the status back once")
	}
	if p.Status.Phase != corev1.PodPending || len(p.Status.ContainerStatuses) != 0 || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Reason != corev1.PodReasonSchedulingGated {
		t.Errorf("cleared status %+v", p.Status)
	}
}

func TestRefuse(t *testing.T) {
	owned := managerPod()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)}}
	if why := kindOf(corev1.SchemeGroupVersion.WithKind("Pod")).refuse([]client.Object{managerPod(), owned}, "dispatch"); !strings.Contains(why, "ReplicaSet web-1") {
		t.Errorf("a group with a pod a ReplicaSet made: %q", why)
	}
	job := managerJob(false)
	if why := kindOf(batchv1.SchemeGroupVersion.WithKind("Job")).refuse([]client.Object{job}, "dispatch"); why != "" {
		t.Errorf("a dispatched Job refused: %s", why)
	}
	job.Spec.ManagedBy = nil
	if why := kindOf(batchv1.SchemeGroupVersion.WithKind("Job")).refuse([]client.Object{job}, "dispatch"); !strings.Contains(why, "Job train has spec.managedBy") {
		t.Errorf("a Job without dispatch's managedBy: %q", why)
	}
}
