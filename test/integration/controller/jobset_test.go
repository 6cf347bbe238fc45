package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
)

func replicatedJob(name string, replicas, parallelism int32) jobsetapi.ReplicatedJob {
	return jobsetapi.ReplicatedJob{
		Name:     name,
		Replicas: replicas,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: ptr.To(parallelism),
			Completions: ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				}}},
			}},
		}},
	}
}

func TestJobSetAdmittedAsOneWorkload(t *testing.T) {
	ns, _ := queueSetup(t, "5", nil)
	js := &jobsetapi.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns, Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}},
		Spec: jobsetapi.JobSetSpec{ReplicatedJobs: []jobsetapi.ReplicatedJob{
			replicatedJob("driver", 1, 1),
			replicatedJob("workers", 2, 2),
		}},
	}
	mustCreate(t, js)

	wl := &berthv1alpha1.Workload{}
	waitFor(t, "the JobSet's workload admitted", func(ctx context.Context) error {
		cur := &jobsetapi.JobSet{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(js), cur); err != nil {
			return err
		}
		key := client.ObjectKey{Namespace: ns, Name: jobframework.WorkloadName(jobsetapi.GroupVersion.WithKind("JobSet"), cur.Name, string(cur.UID))}
		if err := server.Client.Get(ctx, key, wl); err != nil {
			return err
		}
		return admitted(wl)
	})
	counts := map[string]int32{}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		counts[psa.Name] = ptr.Deref(psa.Count, 0)
	}
	if diff := cmp.Diff(map[string]int32{"driver": 1, "workers": 4}, counts); diff != "" {
		t.Errorf("admitted podsets (-want +got):\n%s", diff)
	}
	running := &jobsetapi.JobSet{}
	waitFor(t, "the JobSet running", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(js), running); err != nil {
			return err
		}
		if ptr.Deref(running.Spec.Suspend, true) {
			return fmt.Errorf("still suspended")
		}
		return nil
	})
	for _, rj := range running.Spec.ReplicatedJobs {
		if got := rj.Template.Spec.Template.Labels[berthv1alpha1.PodSetLabel]; got != rj.Name {
			t.Errorf("replicated job %s: podset label %q", rj.Name, got)
		}
	}

	waitFor(t, "completing the JobSet", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(js), running); err != nil {
			return err
		}
		meta.SetStatusCondition(&running.Status.Conditions, metav1.Condition{Type: string(jobsetapi.JobSetCompleted), Status: metav1.ConditionTrue, Reason: "AllJobsCompleted", Message: "done"})
		return server.Client.Status().Update(ctx, running)
	})
	waitFor(t, "the workload finished", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), wl); err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("not finished: %v", wl.Status.Conditions)
		}
		return nil
	})
}

// TestOrphanedWorkloadSuspendsTheJobSetOfItsPods plays what is left of a
// TrainJob deleted with --cascade=orphan: its Workload, without an owner,
// and the JobSet Trainer made, whose Job runs a pod of that Workload. Berth
// suspends the JobSet, not only its Job, which the JobSet controller would
// start again; it keeps the Workload, and its quota, until the pod has
// ended, and then deletes it.
func TestOrphanedWorkloadSuspendsTheJobSetOfItsPods(t *testing.T) {
	ns := namespace(t, nil)
	set := &jobsetapi.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns},
		Spec: jobsetapi.JobSetSpec{ReplicatedJobs: []jobsetapi.ReplicatedJob{replicatedJob("node", 1, 1)}}}
	mustCreate(t, set)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "kept-node-0", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, jobsetapi.SchemeGroupVersion.WithKind("JobSet"))}},
		Spec: *set.Spec.ReplicatedJobs[0].Template.Spec.DeepCopy()}
	mustCreate(t, job)
	wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "trainjob-gone", Namespace: ns,
		Labels: map[string]string{berthv1alpha1.JobUIDLabel: "uid-of-the-deleted-trainjob"}},
		Spec: berthv1alpha1.WorkloadSpec{QueueName: "main", PodSets: []berthv1alpha1.PodSet{{Name: "node", Count: 1, Template: job.Spec.Template}}}}
	pod := podOf(job, "kept-node-0-0")
	pod.OwnerReferences[0].Name, pod.OwnerReferences[0].UID = job.Name, job.UID
	pod.Labels = map[string]string{berthv1alpha1.WorkloadLabel: wl.Name, berthv1alpha1.ManagedLabel: "true"}
	// The pod was made while its Workload was admitted: made now, naming a
	// Workload that does not exist, it would be refused.
	withoutPodCreationCheck(t, ns, func() { mustCreate(t, pod) })
	setPodPhase(t, pod, corev1.PodRunning)
	// The Workload last, once Berth's cache holds its running pod: an
	// orphaned Workload without pods is deleted at once.
	waitFor(t, "the pod in the controller's sight", func(ctx context.Context) error {
		pods := &corev1.PodList{}
		if err := server.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{berthv1alpha1.WorkloadLabel: wl.Name}); err != nil {
			return err
		}
		if len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	mustCreate(t, wl)

	waitFor(t, "the kept JobSet suspended", func(ctx context.Context) error {
		cur := &jobsetapi.JobSet{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(set), cur); err != nil {
			return err
		}
		if !ptr.Deref(cur.Spec.Suspend, false) {
			return fmt.Errorf("spec.suspend is %v", cur.Spec.Suspend)
		}
		return nil
	})
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(wl), &berthv1alpha1.Workload{}); err != nil {
		t.Fatalf("the Workload went while its pod runs: %v", err)
	}
	setPodPhase(t, pod, corev1.PodFailed)
	waitFor(t, "the Workload deleted once its pod ended", func(ctx context.Context) error {
		err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), &berthv1alpha1.Workload{})
		if err == nil {
			return fmt.Errorf("workload %s still there", wl.Name)
		}
		return client.IgnoreNotFound(err)
	})
}

// withoutPodCreationCheck runs create with the webhook that refuses a
// pod made for a Workload that is not admitted (vpodadmitted.berth.dev)
// leaving out namespace ns, to play a pod made in the past.
func withoutPodCreationCheck(t *testing.T, ns string, create func()) {
	t.Helper()
	ctx := ctxFor(t)
	set := func(skip bool) {
		t.Helper()
		for {
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := server.Client.Get(ctx, client.ObjectKey{Name: "berth-validating-webhook-configuration"}, cfg); err != nil {
				t.Fatal(err)
			}
			for i := range cfg.Webhooks {
				w := &cfg.Webhooks[i]
				if w.Name != "vpodadmitted.berth.dev" || w.NamespaceSelector == nil {
					continue
				}
				for j := range w.NamespaceSelector.MatchExpressions {
					e := &w.NamespaceSelector.MatchExpressions[j]
					e.Values = slices.DeleteFunc(e.Values, func(v string) bool { return v == ns })
					if skip {
						e.Values = append(e.Values, ns)
					}
				}
			}
			err := server.Client.Update(ctx, cfg)
			if err == nil {
				return
			}
			if !apierrors.IsConflict(err) {
				t.Fatal(err)
			}
		}
	}
	set(true)
	defer set(false)
	// The API server reads webhook configurations from its watch.
	time.Sleep(time.Second)
	create()
}
