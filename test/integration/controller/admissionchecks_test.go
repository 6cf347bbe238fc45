package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// checkedQueue makes a flavor with node labels, a ClusterQueue of 4 CPUs of
// it naming checks, and a LocalQueue main in a new namespace, which it
// returns.
func checkedQueue(t *testing.T, checks ...berthv1alpha1.AdmissionCheckReference) (ns, cq string) {
	t.Helper()
	flavor := utiltesting.MakeResourceFlavor(unique("cloud"))
	flavor.Spec.NodeLabels = map[string]string{"cloud.example.com/pool": flavor.Name}
	q := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor.Name).Resource("cpu", "4").Obj()).Obj()
	q.Spec.NamespaceSelector = &metav1.LabelSelector{}
	q.Spec.AdmissionChecks = checks
	ns = namespace(t, nil)
	mustCreate(t, flavor, q, utiltesting.MakeLocalQueue("main", ns, q.Name))
	return ns, q.Name
}

// setCheck plays a check's controller: it sets the state of check on the
// Workload of job.
func setCheck(t *testing.T, job *batchv1.Job, check string, state berthv1alpha1.CheckState, msg string, requeueAfter *int32) {
	t.Helper()
	wl := workloadOf(t, job, "the workload of "+job.Name, func(*berthv1alpha1.Workload) error { return nil })
	waitFor(t, "setting check "+check, func(ctx context.Context) error {
		cur := &berthv1alpha1.Workload{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), cur); err != nil {
			return err
		}
		workload.SetCheckState(cur, berthv1alpha1.AdmissionCheckState{Name: berthv1alpha1.AdmissionCheckReference(check), State: state, Message: msg, RequeueAfterSeconds: requeueAfter})
		return server.Client.Status().Update(ctx, cur)
	})
}

func checkIs(check string, state berthv1alpha1.CheckState) func(*berthv1alpha1.Workload) error {
	return func(wl *berthv1alpha1.Workload) error {
		c := workload.FindCheck(wl, berthv1alpha1.AdmissionCheckReference(check))
		if c == nil || c.State != state {
			return fmt.Errorf("check %s is %+v, want %s; conditions %v", check, c, state, wl.Status.Conditions)
		}
		return nil
	}
}

func all(checks ...func(*berthv1alpha1.Workload) error) func(*berthv1alpha1.Workload) error {
	return func(wl *berthv1alpha1.Workload) error {
		for _, c := range checks {
			if err := c(wl); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestAdmissionCheckStates plays an outside check's controller through
// every state: a queue naming an inactive check reserves nothing; with it
// active, quota is reserved and the job stays suspended until the check
// is Ready; Retry releases the quota and queues the workload again after
// the wait the check names; Rejected deactivates it with the check's
// message.
func TestAdmissionCheckStates(t *testing.T) {
	check := unique("manual")
	ac := &berthv1alpha1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: check}, Spec: berthv1alpha1.AdmissionCheckSpec{ControllerName: "example.com/manual"}}
	mustCreate(t, ac)
	ns, cq := checkedQueue(t, berthv1alpha1.AdmissionCheckReference(check))
	waitForClusterQueue(t, cq, activeIs(metav1.ConditionFalse, berthv1alpha1.ReasonAdmissionCheckInactive, "AdmissionCheck "+check+" is not active"))
	job := utiltesting.MakeJob("train", ns).Queue("main").Request(corev1.ResourceCPU, "4").Obj()
	mustCreate(t, job)
	workloadOf(t, job, "the workload waiting on the inactive queue", pendingWith("inactive"))

	waitFor(t, "the check active", func(ctx context.Context) error {
		cur := &berthv1alpha1.AdmissionCheck{}
		if err := server.Client.Get(ctx, client.ObjectKey{Name: check}, cur); err != nil {
			return err
		}
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: "Ready", Message: "ready"})
		return server.Client.Status().Update(ctx, cur)
	})
	waitForClusterQueue(t, cq, activeIs(metav1.ConditionTrue, berthv1alpha1.ReasonReady, ""))
	workloadOf(t, job, "quota reserved, the check pending, not admitted", all(
		conditionIs(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, ""),
		conditionIs(berthv1alpha1.WorkloadAdmitted, metav1.ConditionFalse, ""),
		checkIs(check, berthv1alpha1.CheckStatePending)))
	if got := jobState(t, job, true); !ptr.Deref(got.Spec.Suspend, false) {
		t.Fatal("the job runs before its check is Ready")
	}

	setCheck(t, job, check, berthv1alpha1.CheckStateRetry, "the cloud is busy", ptr.To[int32](2))
	wl := workloadOf(t, job, "evicted by the check and requeued with a wait", all(
		conditionIs(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, ""),
		conditionIs(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, berthv1alpha1.ReasonAdmissionCheck),
		func(wl *berthv1alpha1.Workload) error {
			if rs := wl.Status.RequeueState; rs == nil || rs.RequeueAt == nil {
				return fmt.Errorf("requeueState %+v, want a requeueAt", wl.Status.RequeueState)
			}
			return nil
		}))
	if c := workload.FindCondition(wl, berthv1alpha1.WorkloadRequeued); !contains(c.Message, "Admission check "+check+" asks to try again: the cloud is busy") {
		t.Errorf("Requeued says %q, want the check's message", c.Message)
	}
	workloadOf(t, job, "reserved again after the wait, the check pending afresh", all(
		conditionIs(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, ""),
		checkIs(check, berthv1alpha1.CheckStatePending)))

	setCheck(t, job, check, berthv1alpha1.CheckStateReady, "go", nil)
	workloadOf(t, job, "admitted once the check is Ready", admitted)
	jobState(t, job, false)

	other := utiltesting.MakeJob("doomed", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	finishJob(t, jobState(t, job, false))
	mustCreate(t, other)
	workloadOf(t, other, "the second job's check pending", checkIs(check, berthv1alpha1.CheckStatePending))
	setCheck(t, other, check, berthv1alpha1.CheckStateRejected, "no such machines", nil)
	workloadOf(t, other, "deactivated by the rejection, saying why", func(wl *berthv1alpha1.Workload) error {
		c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved)
		if workload.IsActive(wl) || c == nil || c.Status != metav1.ConditionFalse || !contains(c.Message, "Rejected by admission check "+check+": no such machines") {
			return fmt.Errorf("active %v; QuotaReserved %+v", workload.IsActive(wl), c)
		}
		return nil
	})
}

// provisioningCheck makes an AdmissionCheck of Berth's with a
// ProvisioningRequestConfig allowing limit retries one second apart.
func provisioningCheck(t *testing.T, limit int32) string {
	t.Helper()
	return provisioningCheckWith(t, limit, nil)
}

// provisioningCheckWith is provisioningCheck with change applied to the
// config's spec.
func provisioningCheckWith(t *testing.T, limit int32, change func(*berthv1alpha1.ProvisioningRequestConfigSpec)) string {
	t.Helper()
	cfg := &berthv1alpha1.ProvisioningRequestConfig{ObjectMeta: metav1.ObjectMeta{Name: unique("cloud")}, Spec: berthv1alpha1.ProvisioningRequestConfigSpec{
		ProvisioningClassName: autoscalingv1.BestEffortAtomicScaleUp,
		Parameters:            map[string]string{"ValidUntilSeconds": "600"},
		RetryStrategy:         &berthv1alpha1.ProvisioningRequestRetryStrategy{BackoffLimitCount: &limit, BackoffBaseSeconds: ptr.To[int32](1), BackoffMaxSeconds: ptr.To[int32](2)},
	}}
	if change != nil {
		change(&cfg.Spec)
	}
	ac := &berthv1alpha1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: unique("provision")}, Spec: berthv1alpha1.AdmissionCheckSpec{
		ControllerName: berthv1alpha1.ProvisioningRequestControllerName,
		Parameters:     &berthv1alpha1.AdmissionCheckParametersReference{APIGroup: "berth.dev", Kind: "ProvisioningRequestConfig", Name: cfg.Name},
	}}
	mustCreate(t, ac)
	waitFor(t, "the check inactive without its config", func(ctx context.Context) error {
		cur := &berthv1alpha1.AdmissionCheck{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(ac), cur); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, berthv1alpha1.ConditionActive); c == nil || c.Status != metav1.ConditionFalse || !contains(c.Message, "does not exist") {
			return fmt.Errorf("conditions %v", cur.Status.Conditions)
		}
		return nil
	})
	mustCreate(t, cfg)
	waitFor(t, "the check active", func(ctx context.Context) error {
		cur := &berthv1alpha1.AdmissionCheck{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(ac), cur); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cur.Status.Conditions, berthv1alpha1.ConditionActive) {
			return fmt.Errorf("conditions %v", cur.Status.Conditions)
		}
		return nil
	})
	return ac.Name
}

// requests lists the ProvisioningRequests of job's workload.
func requests(ctx context.Context, job *batchv1.Job, wl *berthv1alpha1.Workload) ([]autoscalingv1.ProvisioningRequest, error) {
	prs := &autoscalingv1.ProvisioningRequestList{}
	err := server.Client.List(ctx, prs, client.InNamespace(job.Namespace), client.MatchingLabels{berthv1alpha1.WorkloadLabel: wl.Name})
	return prs.Items, err
}

// setRequest plays cluster-autoscaler: it sets a condition of the request.
func setRequest(t *testing.T, ns, name, typ, msg string) {
	t.Helper()
	waitFor(t, "request "+name+" "+typ, func(ctx context.Context) error {
		pr := &autoscalingv1.ProvisioningRequest{}
		if err := server.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pr); err != nil {
			return err
		}
		meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ, Message: msg})
		return server.Client.Status().Update(ctx, pr)
	})
}

// TestProvisioningRequestCheck: a job in a queue with Berth's check gets a
// ProvisioningRequest for its pods as they will run (the flavor's node
// labels in the PodTemplate, the admitted count), and a restart of the
// controller in between makes no second one; Provisioned admits it and
// its pods carry the request's annotation; when it finishes the request
// goes. A second job's request fails: the check asks to retry, a new
// request is made after the backoff, fails again, and the workload is
// rejected with the request's message.
func TestProvisioningRequestCheck(t *testing.T) {
	check := provisioningCheck(t, 1)
	ns, _ := checkedQueue(t, berthv1alpha1.AdmissionCheckReference(check))
	job := utiltesting.MakeJob("train", ns).Queue("main").Parallelism(2).Request(corev1.ResourceCPU, "2").Obj()
	mustCreate(t, job)
	wl := workloadOf(t, job, "quota reserved, waiting on the request", checkIs(check, berthv1alpha1.CheckStatePending))
	var pr autoscalingv1.ProvisioningRequest
	waitFor(t, "one ProvisioningRequest", func(ctx context.Context) error {
		prs, err := requests(ctx, job, wl)
		if err != nil || len(prs) != 1 {
			cur := &berthv1alpha1.Workload{}
			_ = server.Client.Get(ctx, client.ObjectKeyFromObject(wl), cur)
			return fmt.Errorf("%d requests, %v; checks %+v", len(prs), err, cur.Status.AdmissionChecks)
		}
		pr = prs[0]
		return nil
	})
	if pr.Spec.ProvisioningClassName != autoscalingv1.BestEffortAtomicScaleUp || len(pr.Spec.PodSets) != 1 || pr.Spec.PodSets[0].Count != 2 || pr.Spec.Parameters["ValidUntilSeconds"] != "600" {
		t.Errorf("request spec %+v, want the class, 2 pods and the config's parameters", pr.Spec)
	}
	pt := &corev1.PodTemplate{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKey{Namespace: ns, Name: pr.Spec.PodSets[0].PodTemplateRef.Name}, pt); err != nil {
		t.Fatal(err)
	}
	if len(pt.Template.Spec.NodeSelector) != 1 || pt.Template.Spec.Containers[0].Resources.Requests.Cpu().String() != "2" {
		t.Errorf("PodTemplate spec %+v, want the flavor's node label and 2 CPUs a pod", pt.Template.Spec)
	}

	stopManager()
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if prs, err := requests(ctxFor(t), job, wl); err != nil || len(prs) != 1 {
		t.Fatalf("after a restart: %d requests (%v), want the one made before", len(prs), err)
	}
	if got := jobState(t, job, true); !ptr.Deref(got.Spec.Suspend, false) {
		t.Fatal("the job runs before its nodes are provisioned")
	}

	setRequest(t, ns, pr.Name, autoscalingv1.Provisioned, "2 nodes ready")
	workloadOf(t, job, "admitted once provisioned", all(admitted, checkIs(check, berthv1alpha1.CheckStateReady)))
	running := jobState(t, job, false)
	if got := running.Spec.Template.Annotations[autoscalingv1.ConsumesAnnotation]; got != pr.Name {
		t.Errorf("the pods' template has %s=%q, want %q", autoscalingv1.ConsumesAnnotation, got, pr.Name)
	}
	finishJob(t, running)
	waitFor(t, "the request deleted with the job finished", func(ctx context.Context) error {
		prs, err := requests(ctx, job, wl)
		if err != nil || len(prs) != 0 {
			return fmt.Errorf("%d requests left, %v", len(prs), err)
		}
		return nil
	})

	second := utiltesting.MakeJob("unlucky", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, second)
	wl2 := workloadOf(t, second, "the second job waiting on its request", checkIs(check, berthv1alpha1.CheckStatePending))
	for attempt := 1; attempt <= 2; attempt++ {
		name := fmt.Sprintf("%s-%s-%d", wl2.Name, check, attempt)
		waitFor(t, "request "+name, func(ctx context.Context) error {
			return server.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &autoscalingv1.ProvisioningRequest{})
		})
		setRequest(t, ns, name, autoscalingv1.Failed, "out of H100s in the zone")
	}
	workloadOf(t, second, "rejected after its one retry, saying why", func(wl *berthv1alpha1.Workload) error {
		c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved)
		if workload.IsActive(wl) || c == nil || c.Status != metav1.ConditionFalse || !contains(c.Message, "out of H100s in the zone") {
			return fmt.Errorf("active %v; QuotaReserved %+v", workload.IsActive(wl), c)
		}
		return nil
	})
}

// TestProvisioningOnlyForManagedResources: with managedResources naming
// GPUs, a job that asks for CPUs only passes the check without a
// ProvisioningRequest, and runs.
func TestProvisioningOnlyForManagedResources(t *testing.T) {
	check := provisioningCheckWith(t, 1, func(s *berthv1alpha1.ProvisioningRequestConfigSpec) {
		s.ManagedResources = []corev1.ResourceName{"nvidia.com/gpu"}
	})
	ns, _ := checkedQueue(t, berthv1alpha1.AdmissionCheckReference(check))
	job := utiltesting.MakeJob("cpu-only", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, job)
	wl := workloadOf(t, job, "admitted without a request", all(checkIs(check, berthv1alpha1.CheckStateReady), admitted))
	if c := workload.FindCheck(wl, berthv1alpha1.AdmissionCheckReference(check)); !contains(c.Message, "no ProvisioningRequest is needed") {
		t.Errorf("the check says %q", c.Message)
	}
	jobState(t, job, false)
	if prs, err := requests(ctxFor(t), job, wl); err != nil || len(prs) != 0 {
		t.Errorf("%d ProvisioningRequests (%v), want none", len(prs), err)
	}
}
