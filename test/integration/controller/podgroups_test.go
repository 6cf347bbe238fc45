package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/metrics"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// groupWorkloads lists the Workloads of pod group g in ns.
func groupWorkloads(ctx context.Context, ns, g string) ([]berthv1alpha1.Workload, error) {
	list := &berthv1alpha1.WorkloadList{}
	err := server.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{berthv1alpha1.PodGroupNameLabel: g})
	return list.Items, err
}

// groupWorkload waits for the one Workload of pod group g in ns, and
// returns it once check passes.
func groupWorkload(t *testing.T, ns, g, what string, check func(*berthv1alpha1.Workload) error) *berthv1alpha1.Workload {
	t.Helper()
	var wl *berthv1alpha1.Workload
	waitFor(t, what, func(ctx context.Context) error {
		items, err := groupWorkloads(ctx, ns, g)
		if err != nil {
			return err
		}
		if len(items) != 1 {
			return fmt.Errorf("group %s has %d Workloads", g, len(items))
		}
		wl = &items[0]
		return check(wl)
	})
	return wl
}

// noGroupWorkload checks, after the controller had time to act, that pod
// group g has no Workload.
func noGroupWorkload(t *testing.T, ns, g string) {
	t.Helper()
	time.Sleep(time.Second)
	items, err := groupWorkloads(ctxFor(t), ns, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 0 {
		t.Fatalf("group %s has a Workload %s before it is whole", g, items[0].Name)
	}
}

func stillGated(p *corev1.Pod) error {
	if !gated(p) {
		return fmt.Errorf("pod %s was let through", p.Name)
	}
	return nil
}

func TestPodGroupIsAdmittedWholeByRole(t *testing.T) {
	ns, cqName := queueSetup(t, "4", nil)
	a := utiltesting.MakePod("worker-a", ns).Queue("main").Group("infer", "3").Request(corev1.ResourceCPU, "1").Obj()
	b := utiltesting.MakePod("worker-b", ns).Queue("main").Group("infer", "3").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, a, b)
	noGroupWorkload(t, ns, "infer")

	leader := utiltesting.MakePod("leader", ns).Queue("main").Group("infer", "3").Request(corev1.ResourceCPU, "2").Obj()
	mustCreate(t, leader)
	wl := groupWorkload(t, ns, "infer", "the group's Workload admitted", admitted)
	counts := map[int32]bool{}
	for _, ps := range wl.Spec.PodSets {
		counts[ps.Count] = true
	}
	if len(wl.Spec.PodSets) != 2 || !counts[1] || !counts[2] {
		t.Errorf("the group's podsets %v, want its two roles: 2 workers and 1 leader", wl.Spec.PodSets)
	}
	if len(wl.OwnerReferences) != 3 {
		t.Errorf("the group's Workload has %d owners, want its 3 pods", len(wl.OwnerReferences))
	}
	flavor := queueFlavor(t, cqName)
	for _, p := range []*corev1.Pod{a, b, leader} {
		got := podState(t, p, "pod "+p.Name+" let through", ungated)
		if got.Spec.NodeSelector["pool"] != flavor || got.Labels[berthv1alpha1.WorkloadLabel] != wl.Name {
			t.Errorf("pod %s: node selector %v, labels %v", p.Name, got.Spec.NodeSelector, got.Labels)
		}
	}
	waitForEvent(t, ns, leader.Name, berthv1alpha1.WorkloadAdmitted, "Admitted by ClusterQueue "+cqName)

	for _, p := range []*corev1.Pod{a, b, leader} {
		setPodPhase(t, p, corev1.PodSucceeded)
	}
	groupWorkload(t, ns, "infer", "the group's Workload finished", conditionIs(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, berthv1alpha1.ReasonSucceeded))
}

func TestPodGroupBeyondQuotaWaitsWhole(t *testing.T) {
	ns, _ := queueSetup(t, "2", nil)
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, utiltesting.MakePod(fmt.Sprintf("p%d", i), ns).Queue("main").Group("big", "3").Request(corev1.ResourceCPU, "1").Obj())
	}
	for _, p := range pods {
		mustCreate(t, p)
	}
	groupWorkload(t, ns, "big", "the group waiting", pendingWith("needs 3 cpu, 2 available"))
	for _, p := range pods {
		podState(t, p, "pod "+p.Name+" held", stillGated)
	}
}

func TestPodGroupThatDisagreesIsNotQueued(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	a := utiltesting.MakePod("a", ns).Queue("main").Group("odd", "2").Request(corev1.ResourceCPU, "1").Obj()
	b := utiltesting.MakePod("b", ns).Queue("main").Group("odd", "3").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, a, b)
	waitForEvent(t, ns, a.Name, "InvalidJob", "disagree on their annotation berth.dev/pod-group-total-count: 2, 3")
	noGroupWorkload(t, ns, "odd")

	bad := utiltesting.MakePod("c", ns).Queue("main").Group("bad", "many").Obj()
	err := server.Client.Create(ctxFor(t), bad)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.annotations[berth.dev/pod-group-total-count]") {
		t.Errorf("creating a pod of a group of %q pods: %v, want it refused with the field named", "many", err)
	}
}

func TestPodOfAGroupCannotChangeGroupOrQueue(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	p := utiltesting.MakePod("a", ns).Queue("main").Group("one", "1").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, p)
	groupWorkload(t, ns, "one", "the group admitted", admitted)
	running := podState(t, p, "the pod let through", ungated)
	for _, k := range []string{berthv1alpha1.PodGroupNameLabel, berthv1alpha1.QueueNameLabel} {
		patch := client.MergeFrom(running.DeepCopy())
		moved := running.DeepCopy()
		moved.Labels[k] = "elsewhere"
		err := server.Client.Patch(ctxFor(t), moved, patch)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.labels["+k+"]") {
			t.Errorf("changing label %s of a running pod of a group: %v, want it refused with the field named", k, err)
		}
	}
}

func TestStatefulSetIsOneGroup(t *testing.T) {
	ns, cqName := queueSetup(t, "3", nil)
	tmpl := utiltesting.MakePod("", ns).Request(corev1.ResourceCPU, "1").Obj()
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: tmpl.Spec},
		},
	}
	mustCreate(t, sts)
	if got := sts.Spec.Template.Labels[berthv1alpha1.PodGroupNameLabel]; got != "db" {
		t.Fatalf("the StatefulSet's pods are in group %q, want db", got)
	}
	// The API server runs no StatefulSet controller: the test creates the
	// pods as it would, one at a time.
	replica := func(i int) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%d", i), Namespace: ns, Labels: sts.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: *sts.Spec.Template.Spec.DeepCopy(),
		}
		mustCreate(t, p)
		return p
	}
	first := replica(0)
	wl := groupWorkload(t, ns, "db", "the StatefulSet's Workload admitted with its first pod", admitted)
	if wl.Spec.PodSets[0].Count != 3 {
		t.Errorf("the Workload asks for %d pods, want the 3 replicas", wl.Spec.PodSets[0].Count)
	}
	if o := metav1.GetControllerOf(wl); o != nil || len(wl.OwnerReferences) != 1 || wl.OwnerReferences[0].UID != sts.UID {
		t.Errorf("the Workload's owners %v, want the StatefulSet alone", wl.OwnerReferences)
	}
	podState(t, first, "the first replica let through", ungated)
	second := replica(1)
	podState(t, second, "the second replica let through", ungated)
	setPodPhase(t, first, corev1.PodRunning)

	// Scaled up past what was admitted: the group is admitted again for
	// its new size; its running pods are stopped.
	patch := client.MergeFrom(sts.DeepCopy())
	sts.Spec.Replicas = ptr.To[int32](4)
	if err := server.Client.Patch(ctxFor(t), sts, patch); err != nil {
		t.Fatal(err)
	}
	evictedBefore := testutil.ToFloat64(metrics.EvictedWorkloads.WithLabelValues(metrics.CQ(cqName, berthv1alpha1.ReasonPodSetsChanged)...))
	third := replica(2)
	// The Workload admitted for 3 is evicted for the new size, counted and
	// told as every other eviction. It is read from its count and its
	// event: once its pods are gone the group's Workload for 4 replaces
	// it, sometimes before a poll of its conditions would see it evicted.
	evicted := wl
	waitFor(t, "the eviction counted and its event recorded", func(ctx context.Context) error {
		if got := testutil.ToFloat64(metrics.EvictedWorkloads.WithLabelValues(metrics.CQ(cqName, berthv1alpha1.ReasonPodSetsChanged)...)) - evictedBefore; got != 1 {
			return fmt.Errorf("berth_evicted_workloads_total{reason=PodSetsChanged} grew by %v, want 1", got)
		}
		evs := &eventsv1.EventList{}
		if err := server.Client.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.UID == evicted.UID && e.Reason == berthv1alpha1.WorkloadEvicted && strings.Contains(e.Note, berthv1alpha1.ReasonPodSetsChanged) {
				return nil
			}
		}
		return fmt.Errorf("no Evicted event on Workload %s among %d events", evicted.Name, len(evs.Items))
	})
	waitFor(t, "the running replicas deleted", func(ctx context.Context) error {
		for _, p := range []*corev1.Pod{first, second} {
			if err := server.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod %s is still there (%v)", p.Name, err)
			}
		}
		return nil
	})
	podState(t, third, "the new replica held", stillGated)
	groupWorkload(t, ns, "db", "the group waiting for 4 pods' quota", func(wl *berthv1alpha1.Workload) error {
		if wl.Spec.PodSets[0].Count != 4 {
			return fmt.Errorf("the Workload asks for %d pods", wl.Spec.PodSets[0].Count)
		}
		return pendingWith("needs 4 cpu, 3 available")(wl)
	})
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		if cq.Status.AdmittedWorkloads != 0 {
			return fmt.Errorf("%d workloads admitted", cq.Status.AdmittedWorkloads)
		}
		return nil
	})

	// Scaled back within the quota, with no pod created or deleted: the
	// StatefulSet's change alone makes the group fit again.
	patch = client.MergeFrom(sts.DeepCopy())
	sts.Spec.Replicas = ptr.To[int32](3)
	if err := server.Client.Patch(ctxFor(t), sts, patch); err != nil {
		t.Fatal(err)
	}
	groupWorkload(t, ns, "db", "the group of 3 admitted again", func(wl *berthv1alpha1.Workload) error {
		if wl.Spec.PodSets[0].Count != 3 {
			return fmt.Errorf("the Workload asks for %d pods", wl.Spec.PodSets[0].Count)
		}
		return admitted(wl)
	})
	podState(t, third, "the waiting replica let through", ungated)

	// Scaled to zero: the group's Workload goes.
	if err := server.Client.Delete(ctxFor(t), third); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Workload of the emptied group deleted", func(ctx context.Context) error {
		items, err := groupWorkloads(ctx, ns, "db")
		if err != nil || len(items) != 0 {
			return fmt.Errorf("%d Workloads (%v)", len(items), err)
		}
		return nil
	})
}

func TestLeaderWorkerSetHandsItsQueueDown(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	lws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "infer", "namespace": ns, "labels": map[string]any{berthv1alpha1.QueueNameLabel: "main"}},
		"spec": map[string]any{"replicas": int64(2), "leaderWorkerTemplate": map[string]any{
			"size": int64(3),
			"workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "w", "image": "registry.example/infer"},
			}}},
		}},
	}}
	mustCreate(t, lws)
	labels, _, err := unstructured.NestedStringMap(lws.Object, "spec", "leaderWorkerTemplate", "workerTemplate", "metadata", "labels")
	if err != nil || labels[berthv1alpha1.QueueNameLabel] != "main" {
		t.Errorf("the worker template's labels %v (%v), want the queue's", labels, err)
	}
}

func TestLeaderWorkerSetThatWaitsForItsLeaderIsRefused(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	lws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "infer", "namespace": ns, "labels": map[string]any{berthv1alpha1.QueueNameLabel: "main"}},
		"spec": map[string]any{"startupPolicy": "LeaderReady", "leaderWorkerTemplate": map[string]any{
			"size":           int64(2),
			"workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "w", "image": "registry.example/infer"}}}},
		}},
	}}
	err := server.Client.Create(ctxFor(t), lws)
	if err == nil || !strings.Contains(err.Error(), "spec.startupPolicy") {
		t.Errorf("creating a queued LeaderWorkerSet with startupPolicy LeaderReady: %v, want it refused with the field named", err)
	}
}

func TestPodGroupIsPreemptedWhole(t *testing.T) {
	high := utiltesting.MakeWorkloadPriorityClass(unique("high"), 1000)
	mustCreate(t, high)
	ns, _ := queueSetup(t, "2", func(cq *utiltesting.ClusterQueueWrapper) {
		cq.Preemption(berthv1alpha1.ClusterQueuePreemption{WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority})
	})
	a := utiltesting.MakePod("a", ns).Queue("main").Group("low", "2").Request(corev1.ResourceCPU, "1").Obj()
	b := utiltesting.MakePod("b", ns).Queue("main").Group("low", "2").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, a, b)
	groupWorkload(t, ns, "low", "the low-priority group admitted", admitted)
	for _, p := range []*corev1.Pod{a, b} {
		podState(t, p, "pod "+p.Name+" let through", ungated)
		setPodPhase(t, p, corev1.PodRunning)
	}

	urgent := utiltesting.MakePod("urgent", ns).Queue("main").PriorityClass(high.Name).Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, urgent)
	waitFor(t, "both pods of the preempted group deleted", func(ctx context.Context) error {
		for _, p := range []*corev1.Pod{a, b} {
			if err := server.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod %s is still there (%v)", p.Name, err)
			}
		}
		return nil
	})
	waitForEvent(t, ns, a.Name, berthv1alpha1.WorkloadPreempted, "Preempted in ClusterQueue")
	waitForEvent(t, ns, b.Name, berthv1alpha1.WorkloadPreempted, "Preempted in ClusterQueue")
	// A group without pods has no Workload: Berth deletes it (the API
	// server here runs no garbage collector), and the urgent pod takes the
	// quota.
	podWorkload(t, urgent, "the urgent pod admitted", admitted)
	podState(t, urgent, "the urgent pod let through", ungated)
}

// TestPodJoiningAnAdmittedGroupStaysHeld: a user adds a pod with the label
// of a group that was admitted for one pod, to run a second on its quota.
// The extra pod stays gated, the group's pod that runs keeps running, and
// the ClusterQueue's usage stays what was admitted.
func TestPodJoiningAnAdmittedGroupStaysHeld(t *testing.T) {
	ns, cqName := queueSetup(t, "4", nil)
	first := utiltesting.MakePod("a", ns).Queue("main").Group("one", "1").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, first)
	groupWorkload(t, ns, "one", "the group admitted", admitted)
	podState(t, first, "the group's pod let through", ungated)

	extra := utiltesting.MakePod("b", ns).Queue("main").Group("one", "1").Request(corev1.ResourceCPU, "1").Obj()
	mustCreate(t, extra)
	waitForEvent(t, ns, extra.Name, "InvalidJob", "it has 2 pods, its size is 1")
	podState(t, extra, "the extra pod held", stillGated)
	podState(t, first, "the admitted pod still let through", ungated)
	waitForClusterQueue(t, cqName, func(cq *berthv1alpha1.ClusterQueue) error {
		return usageIs(cq, "1", "0")
	})
}

// TestLeaderWorkerSetPartsCreatedAtOnceKeepTheQueue creates a
// LeaderWorkerSet's StatefulSets as its controller does, each a moment
// after the object that controls it: the leaders' right after the
// LeaderWorkerSet, and each group's workers' right after its leader pod.
// Berth's cache may not have seen that object yet; judging the
// StatefulSet unheld then would strip the queue from its template, and its
// pods would run without a gate (an end-to-end run saw a group's workers
// so, beside the group admitted before it).
func TestLeaderWorkerSetPartsCreatedAtOnceKeepTheQueue(t *testing.T) {
	ns, _ := queueSetup(t, "4", nil)
	const nameLabel = "leaderworkerset.sigs.k8s.io/name"
	queued := func(extra map[string]string) map[string]string {
		out := map[string]string{berthv1alpha1.QueueNameLabel: "main"}
		maps.Copy(out, extra)
		return out
	}
	statefulSet := func(name string, owner client.Object, gvk schema.GroupVersionKind, labels map[string]string) *appsv1.StatefulSet {
		tmpl := utiltesting.MakePod("", ns).Request(corev1.ResourceCPU, "1").Obj()
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{nameLabel: owner.GetLabels()[nameLabel]},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)}},
			Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: owner.GetLabels()[nameLabel]}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
			},
		}
	}
	var lost []string
	for i := range 30 {
		name := fmt.Sprintf("infer%d", i)
		lws := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{berthv1alpha1.QueueNameLabel: "main", nameLabel: name}},
			"spec": map[string]any{"leaderWorkerTemplate": map[string]any{
				"size":           int64(2),
				"workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "w", "image": "registry.example/infer"}}}},
			}},
		}}
		mustCreate(t, lws)
		leaders := statefulSet(name, lws, schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
			queued(map[string]string{nameLabel: name, "leaderworkerset.sigs.k8s.io/worker-index": "0"}))
		mustCreate(t, leaders)
		if leaders.Spec.Template.Labels[berthv1alpha1.QueueNameLabel] == "" {
			lost = append(lost, "StatefulSet "+leaders.Name)
		}
		leader := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns, Labels: leaders.Spec.Template.Labels,
				Annotations:     map[string]string{"leaderworkerset.sigs.k8s.io/size": "2"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(leaders, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: *leaders.Spec.Template.Spec.DeepCopy(),
		}
		if leader.Labels[berthv1alpha1.QueueNameLabel] == "" {
			continue
		}
		mustCreate(t, leader)
		workers := statefulSet(name+"-0", leader, corev1.SchemeGroupVersion.WithKind("Pod"),
			queued(map[string]string{nameLabel: name, "leaderworkerset.sigs.k8s.io/group-index": "0"}))
		mustCreate(t, workers)
		if workers.Spec.Template.Labels[berthv1alpha1.QueueNameLabel] == "" {
			lost = append(lost, "StatefulSet "+workers.Name)
		}
	}
	if len(lost) > 0 {
		t.Errorf("the queue label was taken from the template of %s: their pods would run ungated", strings.Join(lost, ", "))
	}
}
