package controller

import (
	"fmt"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controllermanager"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// defaultQueueSetup is queueSetup with the namespace's LocalQueue named
// default too, once the controller has seen it: the webhooks look for it
// in the controller's cache, and a job created a moment after it may
// still miss it (unlabelled.go's defaultQueueExists says so).
func defaultQueueSetup(t *testing.T) string {
	t.Helper()
	ns, cq := queueSetup(t, "4", nil)
	mustCreate(t, utiltesting.MakeLocalQueue(berthv1alpha1.DefaultLocalQueueName, ns, cq))
	waitForLocalQueue(t, ns, berthv1alpha1.DefaultLocalQueueName, func(lq *berthv1alpha1.LocalQueue) error {
		if !meta.IsStatusConditionTrue(lq.Status.Conditions, berthv1alpha1.ConditionActive) {
			return fmt.Errorf("not active yet: %v", lq.Status.Conditions)
		}
		return nil
	})
	return ns
}

func TestDefaultLocalQueueTakesUnlabelledJobs(t *testing.T) {
	ns := defaultQueueSetup(t)
	job := utiltesting.MakeJob("unlabelled", ns).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	if got := job.Labels[berthv1alpha1.QueueNameLabel]; got != berthv1alpha1.DefaultLocalQueueName {
		t.Errorf("the created Job's queue label = %q, want %q", got, berthv1alpha1.DefaultLocalQueueName)
	}
	if !ptr.Deref(job.Spec.Suspend, false) {
		t.Error("the created Job is not suspended")
	}
	wl := workloadOf(t, job, "admission through the default LocalQueue", admitted)
	if wl.Spec.QueueName != berthv1alpha1.DefaultLocalQueueName {
		t.Errorf("Workload queue = %q, want %q", wl.Spec.QueueName, berthv1alpha1.DefaultLocalQueueName)
	}

	// Taking the label off would leave every queue: refused, naming it.
	// Another queue is the owner's to name.
	waiting := utiltesting.MakeJob("waiting", ns).Request(corev1.ResourceCPU, "8").Obj()
	mustCreate(t, waiting)
	workloadOf(t, waiting, "waiting for quota", pendingWith("needs 8 cpu"))
	removal := client.MergeFrom(waiting.DeepCopy())
	delete(waiting.Labels, berthv1alpha1.QueueNameLabel)
	err := server.Client.Patch(ctxFor(t), waiting, removal)
	if !apierrors.IsInvalid(err) || !contains(err.Error(), "metadata.labels[berth.dev/queue-name]: Forbidden: cannot be removed: LocalQueue default takes") {
		t.Errorf("removing the queue label of a waiting job in a namespace with a default LocalQueue: %v, want it refused", err)
	}

	named := utiltesting.MakeJob("named", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, named)
	if got := named.Labels[berthv1alpha1.QueueNameLabel]; got != "main" {
		t.Errorf("a Job that names its queue was moved to %q", got)
	}

	// A part of a JobSet waits with its JobSet, which took the queue: its
	// Jobs (the JobSet controller's, owned by it) must not queue again.
	js := &jobsetapi.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: ns},
		Spec:       jobsetapi.JobSetSpec{ReplicatedJobs: []jobsetapi.ReplicatedJob{replicatedJob("workers", 1, 1)}},
	}
	mustCreate(t, js)
	if got := js.Labels[berthv1alpha1.QueueNameLabel]; got != berthv1alpha1.DefaultLocalQueueName {
		t.Errorf("the created JobSet's queue label = %q, want %q", got, berthv1alpha1.DefaultLocalQueueName)
	}
	part := utiltesting.MakeJob("set-workers-0", ns).Request(corev1.ResourceCPU, "1").Obj()
	part.Labels = map[string]string{jobsetapi.JobSetNameKey: js.Name}
	part.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: jobsetapi.GroupVersion.String(), Kind: "JobSet", Name: js.Name, UID: js.UID, Controller: ptr.To(true),
	}}
	mustCreate(t, part)
	if got, ok := part.Labels[berthv1alpha1.QueueNameLabel]; ok {
		t.Errorf("a JobSet's Job got the queue label %q", got)
	}
}

func TestDefaultLocalQueueTakesUnlabelledDeployments(t *testing.T) {
	ns := defaultQueueSetup(t)
	pod := utiltesting.MakePod("", ns).Obj()
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "serve", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "serve"}}, Spec: pod.Spec},
		},
	}
	mustCreate(t, d)
	want := map[string]string{"app": "serve", berthv1alpha1.QueueNameLabel: berthv1alpha1.DefaultLocalQueueName}
	if diff := cmp.Diff(want, d.Spec.Template.Labels); diff != "" {
		t.Errorf("the created Deployment's template labels (-want +got):\n%s", diff)
	}
	removal := client.MergeFrom(d.DeepCopy())
	delete(d.Labels, berthv1alpha1.QueueNameLabel)
	if err := server.Client.Patch(ctxFor(t), d, removal); err == nil || !contains(err.Error(), "cannot be removed: LocalQueue default takes") {
		t.Errorf("removing the queue label of a Deployment in a namespace with a default LocalQueue: %v, want it refused", err)
	}
}

func TestUnlabelledJobsOutsideTheDefaultQueue(t *testing.T) {
	// No LocalQueue named default: the Job is not Berth's.
	ns, _ := queueSetup(t, "4", nil)
	job := utiltesting.MakeJob("free", ns).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	if _, ok := job.Labels[berthv1alpha1.QueueNameLabel]; ok || ptr.Deref(job.Spec.Suspend, false) {
		t.Errorf("a Job in a namespace without a default LocalQueue was taken: labels %v, suspend %v", job.Labels, job.Spec.Suspend)
	}

	// A namespace managedJobsNamespaceSelector leaves out: its default
	// LocalQueue takes nothing, and manageJobsWithoutQueueName holds
	// nothing there; in a selected one, the unlabelled Job is held.
	withManager(t, func(o *controllermanager.Options) {
		o.Jobs.ManagedNamespaces = labels.SelectorFromSet(labels.Set{"berth-test/managed": "true"})
		o.Jobs.ManageJobsWithoutQueueName = true
	})
	left := defaultQueueSetup(t)
	outside := utiltesting.MakeJob("outside", left).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, outside)
	if _, ok := outside.Labels[berthv1alpha1.QueueNameLabel]; ok || ptr.Deref(outside.Spec.Suspend, false) {
		t.Errorf("a Job in a namespace the selector leaves out was taken: labels %v, suspend %v", outside.Labels, outside.Spec.Suspend)
	}
	selected := namespace(t, map[string]string{"berth-test/managed": "true"})
	held := utiltesting.MakeJob("held", selected).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, held)
	if !ptr.Deref(held.Spec.Suspend, false) {
		t.Error("manageJobsWithoutQueueName: an unlabelled Job in a selected namespace is not held")
	}
	workloadOf(t, held, "waiting without a queue", pendingWith("The workload has no spec.queueName"))
}

// TestOwnerReferencesDoNotSkipTheDefaultQueue: in a namespace with a
// default LocalQueue, a job whose controller reference names an object
// that is not a job Berth holds, or a job that does not make objects of
// its kind, is queued like any unlabelled one (its owner references are
// its creator's to write); only a held job's own parts skip it, to wait
// with that job.
func TestOwnerReferencesDoNotSkipTheDefaultQueue(t *testing.T) {
	ns := defaultQueueSetup(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}}
	mustCreate(t, cm)
	controlledBy := func(obj client.Object, apiVersion, kind, name string, uid types.UID) {
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}})
	}
	queued := func(obj metav1.Object, what string) {
		t.Helper()
		if got := obj.GetLabels()[berthv1alpha1.QueueNameLabel]; got != berthv1alpha1.DefaultLocalQueueName {
			t.Errorf("%s: queue label %q, want %q", what, got, berthv1alpha1.DefaultLocalQueueName)
		}
	}

	orphan := utiltesting.MakeJob("claims-a-jobset", ns).Request(corev1.ResourceCPU, "1").Obj()
	controlledBy(orphan, jobsetapi.SchemeGroupVersion.String(), "JobSet", "not-there", "0e0e0e0e-0000-4000-8000-000000000000")
	mustCreate(t, orphan)
	queued(orphan, "a Job naming a JobSet that is not there")
	if !ptr.Deref(orphan.Spec.Suspend, false) {
		t.Error("a Job naming a JobSet that is not there runs")
	}

	job := utiltesting.MakeJob("queued", ns).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	tmpl := utiltesting.MakePod("", ns).Request(corev1.ResourceCPU, "1").Obj()
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	labels := map[string]string{"app": "claims"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "claims-a-job", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec}}}
	controlledBy(d, "batch/v1", "Job", job.Name, job.UID)
	mustCreate(t, d)
	queued(d, "a Deployment naming a queued Job, which makes pods, not Deployments")
	queued(&metav1.ObjectMeta{Labels: d.Spec.Template.Labels}, "its pod template")

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "claims-a-configmap", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec}}}
	controlledBy(sts, "v1", "ConfigMap", cm.Name, cm.UID)
	mustCreate(t, sts)
	queued(sts, "a StatefulSet a ConfigMap controls")
	if got := sts.Spec.Template.Labels[berthv1alpha1.PodGroupNameLabel]; got != sts.Name {
		t.Errorf("the StatefulSet's pods are in group %q, want %q", got, sts.Name)
	}

	// The pods of a queued Job that runs, its selector's, are its Job's:
	// they run as its admission says. A pod its selector does not match
	// the Job controller would release: it waits by itself.
	workloadOf(t, job, "the queued Job admitted", admitted)
	job = jobState(t, job, false)
	own := utiltesting.MakePod("queued-pod", ns).Queue(berthv1alpha1.DefaultLocalQueueName).Request(corev1.ResourceCPU, "1").
		OwnedBy("batch/v1", "Job", job.Name, string(job.UID)).Obj()
	maps.Copy(own.Labels, job.Spec.Selector.MatchLabels)
	mustCreate(t, own)
	if len(own.Spec.SchedulingGates) != 0 {
		t.Errorf("a pod of a running queued Job was queued by itself: gates %v", own.Spec.SchedulingGates)
	}
	stray := utiltesting.MakePod("not-its-selectors", ns).Queue(berthv1alpha1.DefaultLocalQueueName).Request(corev1.ResourceCPU, "1").
		OwnedBy("batch/v1", "Job", job.Name, string(job.UID)).Obj()
	mustCreate(t, stray)
	if err := stillGated(stray); err != nil {
		t.Errorf("a pod naming a queued Job that its selector does not match: %v", err)
	}
}
