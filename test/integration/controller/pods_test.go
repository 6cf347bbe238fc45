package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// podWorkload waits for a pod's Workload and returns it when check passes.
func podWorkload(t *testing.T, pod *corev1.Pod, what string, check func(*berthv1alpha1.Workload) error) *berthv1alpha1.Workload {
	t.Helper()
	wl := &berthv1alpha1.Workload{}
	waitFor(t, what, func(ctx context.Context) error {
		key := client.ObjectKey{Namespace: pod.Namespace, Name: jobframework.WorkloadName(podGVK, pod.Name, string(pod.UID))}
		if err := server.Client.Get(ctx, key, wl); err != nil {
			return err
		}
		return check(wl)
	})
	return wl
}

// podState waits until check passes on the stored pod, and returns it.
func podState(t *testing.T, pod *corev1.Pod, what string, check func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	cur := &corev1.Pod{}
	waitFor(t, what, func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			return err
		}
		return check(cur)
	})
	return cur
}

func gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == berthv1alpha1.AdmissionGate })
}

func ungated(p *corev1.Pod) error {
	if gated(p) {
		return fmt.Errorf("pod %s still carries the gate %s", p.Name, berthv1alpha1.AdmissionGate)
	}
	return nil
}

// setPodPhase plays the kubelet: the pod is bound, and reaches phase.
func setPodPhase(t *testing.T, pod *corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	waitFor(t, fmt.Sprintf("pod %s %s", pod.Name, phase), func(ctx context.Context) error {
		cur := &corev1.Pod{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			return err
		}
		cur.Status.Phase = phase
		return server.Client.Status().Update(ctx, cur)
	})
}

func TestPodIsGatedAdmittedWithItsFlavorAndFinished(t *testing.T) {
	ns, cqName := queueSetup(t, "2", nil)
	pod := utiltesting.MakePod("serve", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, pod)
	if !gated(pod) {
		t.Fatalf("the created pod has the scheduling gates %v, want %s", pod.Spec.SchedulingGates, berthv1alpha1.AdmissionGate)
	}

	wl := podWorkload(t, pod, "the pod's workload admitted", admitted)
	if diff := cmp.Diff(cqName, string(wl.Status.Admission.ClusterQueue)); diff != "" {
		t.Errorf("admitted in (-want +got):\n%s", diff)
	}
	if n := len(wl.Spec.PodSets[0].Template.Spec.SchedulingGates); n != 0 {
		t.Errorf("the workload's template keeps %d scheduling gates, want none", n)
	}
	flavor := queueFlavor(t, cqName)
	running := podState(t, pod, "the pod ungated", ungated)
	if diff := cmp.Diff(map[string]string{"pool": flavor}, running.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	if len(running.Spec.Tolerations) == 0 || !slices.ContainsFunc(running.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Value == flavor }) {
		t.Errorf("tolerations = %v, want the flavor's", running.Spec.Tolerations)
	}
	if got := running.Labels[berthv1alpha1.WorkloadLabel]; got != wl.Name {
		t.Errorf("pod label %s = %q, want %q", berthv1alpha1.WorkloadLabel, got, wl.Name)
	}
	waitForEvent(t, ns, pod.Name, berthv1alpha1.WorkloadAdmitted, "Admitted by ClusterQueue "+cqName)

	setPodPhase(t, pod, corev1.PodSucceeded)
	podWorkload(t, pod, "the workload finished", conditionIs(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, berthv1alpha1.ReasonSucceeded))
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.AdmittedWorkloads != 0 {
			return fmt.Errorf("%d workloads still admitted", cq.Status.AdmittedWorkloads)
		}
		return nil
	})
}

func TestPodsBeyondQuotaWaitGatedAndPreemptionDeletesThePod(t *testing.T) {
	high := utiltesting.MakeWorkloadPriorityClass(unique("high"), 1000)
	mustCreate(t, high)
	ns, _ := queueSetup(t, "1", func(cq *utiltesting.ClusterQueueWrapper) {
		cq.Preemption(berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority})
	})
	low := utiltesting.MakePod("low", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, low)
	lowWl := podWorkload(t, low, "the low-priority pod admitted", admitted)
	podState(t, low, "the low-priority pod ungated", ungated)
	setPodPhase(t, low, corev1.PodRunning)

	second := utiltesting.MakePod("second", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, second)
	podWorkload(t, second, "the second pod waiting", pendingWith("needs 1 cpu, 0 available"))
	podState(t, second, "the second pod still gated", func(p *corev1.Pod) error {
		if !gated(p) {
			return fmt.Errorf("pod %s was ungated beyond the quota", p.Name)
		}
		return nil
	})

	urgent := utiltesting.MakePod("urgent", ns).Queue("main").PriorityClass(high.Name).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, urgent)
	waitFor(t, "the preempted pod deleted", func(ctx context.Context) error {
		err := server.Client.Get(ctx, client.ObjectKeyFromObject(low), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod low is still there (%v)", err)
	})
	waitForEvent(t, ns, low.Name, berthv1alpha1.WorkloadPreempted, "Preempted in ClusterQueue")
	// The preemptor waits while the victim's Workload holds the quota: in
	// a cluster the garbage collector deletes it once its pod is gone.
	podWorkload(t, urgent, "the urgent pod waiting for the victim's quota", pendingWith(""))
	if err := server.Client.Delete(ctxFor(t), lowWl); err != nil {
		t.Fatalf("playing the garbage collector: %v", err)
	}
	podWorkload(t, urgent, "the urgent pod admitted", admitted)
	podState(t, urgent, "the urgent pod ungated", ungated)
	podState(t, second, "the second pod still gated", func(p *corev1.Pod) error {
		if !gated(p) {
			return fmt.Errorf("pod %s was ungated beyond the quota", p.Name)
		}
		return nil
	})
}

func TestPodsBerthDoesNotHold(t *testing.T) {
	ns, _ := queueSetup(t, "2", nil)
	// A pod of a queued Job runs with its Job: its owner reference must
	// name a Job Berth holds (one that does not exist would not do), that
	// runs, and whose selector matches it, as the Job controller's do.
	train := utiltesting.MakeJob("train", ns).Queue("main").Obj()
	mustCreate(t, train)
	workloadOf(t, train, "the queued Job admitted", admitted)
	train = jobState(t, train, false)
	ofTrain := utiltesting.MakePod("job-pod", ns).Queue("main").OwnedBy("batch/v1", "Job", "train", string(train.UID)).Obj()
	maps.Copy(ofTrain.Labels, train.Spec.Selector.MatchLabels)
	cases := map[string]*corev1.Pod{
		"in kube-system":  utiltesting.MakePod(unique("system"), "kube-system").Queue("main").Obj(),
		"of a queued Job": ofTrain,
		"without label":   utiltesting.MakePod("plain", ns).Obj(),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			mustCreate(t, pod)
			if gated(pod) {
				t.Fatalf("pod %s/%s was gated", pod.Namespace, pod.Name)
			}
			wls := &berthv1alpha1.WorkloadList{}
			if err := server.Client.List(ctxFor(t), wls, client.InNamespace(pod.Namespace)); err != nil {
				t.Fatal(err)
			}
			for _, wl := range wls.Items {
				if wl.Name == jobframework.WorkloadName(podGVK, pod.Name, string(pod.UID)) {
					t.Errorf("pod %s got Workload %s", pod.Name, wl.Name)
				}
			}
		})
	}
}

// TestPodCannotEscapeItsQuota tries what a pod's owner can do with kubectl:
// ungate a waiting pod, name a node, resize a running pod.
func TestPodCannotEscapeItsQuota(t *testing.T) {
	ns, _ := queueSetup(t, "1", nil)
	bound := utiltesting.MakePod("bound", ns).Queue("main").Obj()
	bound.Spec.NodeName = "gpu-node-1"
	err := server.Client.Create(ctxFor(t), bound)
	if !apierrors.IsInvalid(err) || !contains(err.Error(), "spec.nodeName") {
		t.Errorf("creating a queued pod with a node name: %v, want refused naming spec.nodeName", err)
	}

	first := utiltesting.MakePod("first", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, first)
	podWorkload(t, first, "the first pod admitted", admitted)
	podState(t, first, "the first pod ungated", ungated)

	waiting := utiltesting.MakePod("waiting", ns).Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, waiting)
	podWorkload(t, waiting, "the second pod waiting", pendingWith("0 available"))
	cur := &corev1.Pod{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(waiting), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.SchedulingGates = nil
	err = server.Client.Update(ctxFor(t), cur)
	if !apierrors.IsInvalid(err) || !contains(err.Error(), "spec.schedulingGates") {
		t.Errorf("removing the gate of a waiting pod: %v, want refused naming spec.schedulingGates", err)
	}

	running := &corev1.Pod{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(first), running); err != nil {
		t.Fatal(err)
	}
	running.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	err = server.Client.SubResource("resize").Update(ctxFor(t), running)
	if !apierrors.IsInvalid(err) || !contains(err.Error(), "cpu per pod cannot grow from 1 to 2") {
		t.Errorf("resizing a running pod beyond its admission: %v, want refused with the requests", err)
	}
}

func TestDeploymentHandsItsQueueDownToItsPods(t *testing.T) {
	ns, _ := queueSetup(t, "2", nil)
	high := utiltesting.MakeWorkloadPriorityClass(unique("serving"), 100)
	mustCreate(t, high)
	pod := utiltesting.MakePod("", ns).Obj()
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "serve", Namespace: ns, Labels: map[string]string{
			berthv1alpha1.QueueNameLabel: "main", berthv1alpha1.PriorityClassLabel: high.Name,
		}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "serve"}}, Spec: pod.Spec},
		},
	}
	mustCreate(t, d)
	want := map[string]string{"app": "serve", berthv1alpha1.QueueNameLabel: "main", berthv1alpha1.PriorityClassLabel: high.Name}
	if diff := cmp.Diff(want, d.Spec.Template.Labels); diff != "" {
		t.Errorf("the created Deployment's template labels (-want +got):\n%s", diff)
	}

	patch := client.MergeFrom(d.DeepCopy())
	delete(d.Labels, berthv1alpha1.PriorityClassLabel)
	d.Labels[berthv1alpha1.QueueNameLabel] = "other"
	if err := server.Client.Patch(ctxFor(t), d, patch); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"app": "serve", berthv1alpha1.QueueNameLabel: "other"}
	if diff := cmp.Diff(want, d.Spec.Template.Labels); diff != "" {
		t.Errorf("the relabelled Deployment's template labels (-want +got):\n%s", diff)
	}
}

// TestControllersOwnUpdatesSkipThePodValidator: the API server does not
// send the controller's own updates of a queued pod (its gate removed, its
// labels) to the pod validator, which would let them through anyway, and
// sends everyone else's. The suite's controller runs as the service account
// that the webhook configuration's matchConditions name.
func TestControllersOwnUpdatesSkipThePodValidator(t *testing.T) {
	ns, _ := queueSetup(t, "1", nil)
	pod := utiltesting.MakePod("waits", ns).Queue("main").Request(corev1.ResourceCPU, "2").Obj()
	mustCreate(t, pod)
	cfg, err := server.ControllerConfig(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	asController, err := client.New(cfg, client.Options{Scheme: server.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	calls := func() float64 {
		n, _ := series(t, "controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate--v1-pod", "code": "200"})
		return n
	}
	touch := func(c client.Client, value string) {
		t.Helper()
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"touched-by":%q}}}`, value))
		if err := c.Patch(ctxFor(t), pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatalf("labelling pod %s as %s: %v", pod.Name, value, err)
		}
	}
	before := calls()
	touch(asController, "controller")
	touch(server.Client, "admin")
	waitFor(t, "the administrator's update validated", func(context.Context) error {
		if calls()-before < 1 {
			return fmt.Errorf("no call to the pod validator")
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	if got := calls() - before; got != 1 {
		t.Errorf("the pod validator was called %v times for one update by the controller and one by an administrator, want once", got)
	}
}
