package multicluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
	for name, tc := range map[string]struct {
		refs []metav1.OwnerReference
		kind string
	}{
		"job":    {refs: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "a", Controller: ptr.To(true)}}, kind: "Job"},
		"jobset": {refs: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "a", Controller: ptr.To(true)}}, kind: "JobSet"},
		"pod":    {refs: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "a", Controller: ptr.To(true)}}},
		"none":   {},
	} {
		t.Run(name, func(t *testing.T) {
			k, _ := ownerOf(&metav1.ObjectMeta{OwnerReferences: tc.refs})
			got := ""
			if k != nil {
				got = k.gvk.Kind
			}
			if got != tc.kind {
				t.Errorf("kind %q, want %q", got, tc.kind)
			}
		})
	}
}
