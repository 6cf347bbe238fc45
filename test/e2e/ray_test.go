package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// rayTemplate is the YAML of a Ray pod template asking for cpu and gpus
// (no memory: the test's queues cover cpu and GPUs only), indented by
// indent.
func rayTemplate(indent, container, cpu string, gpus int) string {
	res := fmt.Sprintf("{requests: {cpu: %q}}", cpu)
	if gpus > 0 {
		res = fmt.Sprintf("{requests: {cpu: %q, nvidia.com/gpu: %d}, limits: {nvidia.com/gpu: %d}}", cpu, gpus, gpus)
	}
	return fmt.Sprintf(`%[1]stemplate:
%[1]s  spec:
%[1]s    containers:
%[1]s    - name: %[2]s
%[1]s      image: rayproject/ray:2.41.0
%[1]s      resources: %[3]s
`, indent, container, res)
}

// rayClusterSpec is the YAML of a Ray cluster spec of a head and a worker
// group gpu of workers pods of one GPU each, indented by indent.
func rayClusterSpec(indent string, workers int) string {
	return fmt.Sprintf(`%[1]sheadGroupSpec:
%[1]s  rayStartParams: {}
%[2]s%[1]sworkerGroupSpecs:
%[1]s- groupName: gpu
%[1]s  replicas: %[3]d
%[1]s  minReplicas: 0
%[1]s  maxReplicas: 8
%[1]s  rayStartParams: {}
%[4]s`, indent, rayTemplate(indent+"  ", "ray-head", "1", 0), workers, rayTemplate(indent+"  ", "ray-worker", "1", 1))
}

// podsOf lists the phases of the pods of Workload wl.
func (e *env) podsOf(ctx context.Context, wl string) string {
	return get(ctx, "pods", "-n", e.ns, "-l", "berth.dev/workload="+wl, "-o",
		`jsonpath={range .items[*]}{.metadata.labels.berth\.dev/podset}={.status.phase}@{.spec.nodeName} {end}`)
}

// TestRayJobAndRayClusterWithKubeRay runs KubeRay's real operator: a
// RayJob is admitted whole (head, workers and KubeRay's submitter pod on
// one Workload), and the cluster KubeRay makes for it runs on that
// Workload, not queued a second time; a RayCluster that needs more GPUs
// than are left waits, suspended, and runs once the RayJob is deleted. The
// GPUs that bound pods hold never exceed the quota.
func TestRayJobAndRayClusterWithKubeRay(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("ray", "", gpuQuota{flavor: e.flavor("h100"), gpus: "4"})
	e.localQueue("main", cq)
	e.sampleGPUs(4)
	apply(t, fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayJob
metadata: {name: train, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  entrypoint: python train.py
  shutdownAfterJobFinishes: true
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers:
      - name: submitter
        image: rayproject/ray:2.41.0
        resources:
          requests: {cpu: 100m}
  rayClusterSpec:
%s`, e.ns, rayClusterSpec("    ", 2)))

	var wl string
	eventually(t, "the RayJob's one Workload admitted, and its head, workers and submitter running on h100 nodes", 120*time.Second, func(ctx context.Context) error {
		out := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.metadata.name}|{.status.conditions[?(@.type=="Admitted")].status}{"\n"}{end}`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "rayjob-train-") || !strings.HasSuffix(lines[0], "|True") {
			return fmt.Errorf("workloads: %q", out)
		}
		wl = strings.SplitN(lines[0], "|", 2)[0]
		pods := e.podsOf(ctx, wl)
		for _, want := range []string{"head=Running@h100-", "gpu=Running@h100-", "submitter=Running@h100-"} {
			if !strings.Contains(pods, want) {
				return fmt.Errorf("no %s among the pods: %q", want, pods)
			}
		}
		if n := strings.Count(pods, "gpu=Running"); n != 2 {
			return fmt.Errorf("%d workers running: %q", n, pods)
		}
		return nil
	})
	cluster := get(t.Context(), "rayjob", "train", "-n", e.ns, "-o", "jsonpath={.status.rayClusterName}")
	if cluster == "" {
		t.Fatal("KubeRay named no cluster for the RayJob")
	}
	if s := get(t.Context(), "raycluster", cluster, "-n", e.ns, "-o", "jsonpath={.spec.suspend}"); s == "true" {
		t.Errorf("the RayJob's cluster %s was suspended", cluster)
	}
	// Growing the running cluster behind the RayJob's back is refused.
	out, err := kubectl(t.Context(), "", "patch", "raycluster", cluster, "-n", e.ns, "--type=json",
		"-p", `[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":4}]`)
	if err == nil || !strings.Contains(err.Error(), "spec.workerGroupSpecs[0].replicas") {
		t.Errorf("growing the RayJob's cluster: %q, %v; want it refused, naming spec.workerGroupSpecs[0].replicas", out, err)
	}

	// A RayCluster of 4 workers does not fit beside the RayJob's 2 GPUs.
	apply(t, fmt.Sprintf("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: notebook, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n%s",
		e.ns, rayClusterSpec("  ", 4)))
	eventually(t, "the RayCluster waiting, suspended, with the numbers", 60*time.Second, func(ctx context.Context) error {
		out := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={range .items[?(@.metadata.ownerReferences[0].kind=="RayCluster")]}{.metadata.name}|{.status.conditions[?(@.type=="QuotaReserved")].message}{"\n"}{end}`)
		if !strings.Contains(out, "needs 4 nvidia.com/gpu, 2 available") {
			return fmt.Errorf("the RayClusters' Workloads: %q", out)
		}
		if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 1 {
			return fmt.Errorf("%d RayCluster Workloads, want the notebook's alone: %q", n, out)
		}
		if s := get(ctx, "raycluster", "notebook", "-n", e.ns, "-o", "jsonpath={.spec.suspend}"); s != "true" {
			return fmt.Errorf("the waiting RayCluster's spec.suspend is %q", s)
		}
		return nil
	})

	if _, err := kubectl(t.Context(), "", "delete", "rayjob", "train", "-n", e.ns, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the RayCluster admitted and its head and 4 workers running once the RayJob is gone", 120*time.Second, func(ctx context.Context) error {
		wl := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={.items[?(@.metadata.ownerReferences[0].name=="notebook")].metadata.name}`)
		if wl == "" {
			return fmt.Errorf("no Workload for the RayCluster")
		}
		pods := e.podsOf(ctx, wl)
		if n := strings.Count(pods, "gpu=Running@h100-"); n != 4 || !strings.Contains(pods, "head=Running@h100-") {
			return fmt.Errorf("pods of %s: %q", wl, pods)
		}
		return nil
	})
}

// TestRayJobPreemptedAndRequeuedWithKubeRay preempts a running RayJob for
// a Job of higher priority: Berth suspends it, KubeRay deletes its cluster
// and submitter, the Job runs only once their pods are gone, and the
// RayJob, requeued, runs again once the Job has finished. The GPUs that
// bound pods hold never exceed the quota.
func TestRayJobPreemptedAndRequeuedWithKubeRay(t *testing.T) {
	e := newEnv(t)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	cq := e.queue("rayprio", "  preemption: {withinClusterQueue: LowerPriority}\n", gpuQuota{flavor: e.flavor("h100"), gpus: "4"})
	e.localQueue("main", cq)
	e.sampleGPUs(4)
	apply(t, fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayJob
metadata: {name: tune, namespace: %s, labels: {berth.dev/queue-name: main, berth.dev/priority-class: %s}}
spec:
  entrypoint: python tune.py
  shutdownAfterJobFinishes: true
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers:
      - name: submitter
        image: rayproject/ray:2.41.0
        resources: {requests: {cpu: 100m}}
  rayClusterSpec:
%s`, e.ns, low, rayClusterSpec("    ", 3)))
	running := func(what string) {
		t.Helper()
		eventually(t, what, 120*time.Second, func(ctx context.Context) error {
			pods := e.podsOf(ctx, e.workload(ctx, "tune"))
			if n := strings.Count(pods, "gpu=Running@h100-"); n != 3 || !strings.Contains(pods, "head=Running@h100-") {
				return fmt.Errorf("the RayJob's pods: %q", pods)
			}
			return nil
		})
	}
	running("the RayJob's head and 3 workers running")

	e.job("urgent", "main", high, 1, 4, "10s")
	e.waitCondition("tune", "Preempted", "True", "InClusterQueue")
	eventually(t, "the RayJob suspended and its pods gone", 90*time.Second, func(ctx context.Context) error {
		if s := get(ctx, "rayjob", "tune", "-n", e.ns, "-o", "jsonpath={.spec.suspend}"); s != "true" {
			return fmt.Errorf("spec.suspend is %q", s)
		}
		if pods := e.podsOf(ctx, e.workload(ctx, "tune")); pods != "" {
			return fmt.Errorf("pods left: %q", pods)
		}
		return nil
	})
	e.waitCondition("urgent", "Admitted", "True", "")
	e.waitPending("tune", "needs 3 nvidia.com/gpu")
	// The Job ends 10s after it runs: the RayJob is admitted again and
	// KubeRay makes its cluster anew.
	e.waitCondition("urgent", "Finished", "True", "")
	running("the requeued RayJob running again")
}

// rayEscapes are the escape matrix's rows for KubeRay's kinds, run by
// KubeRay's operator.
func rayEscapes(t *testing.T, table *escapeTable) {
	t.Run("RayJob/its running cluster's workers and queue label", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("raycluster", "", gpuQuota{flavor: e.flavor("h100"), gpus: "2"}))
		e.sampleGPUs(2)
		apply(t, fmt.Sprintf("apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: grow, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n  entrypoint: python grow.py\n  submissionMode: HTTPMode\n  shutdownAfterJobFinishes: true\n  rayClusterSpec:\n%s",
			e.ns, rayClusterSpec("    ", 2)))
		var cluster string
		eventually(t, "the RayJob's cluster running", 120*time.Second, func(ctx context.Context) error {
			if pods := e.podsOf(ctx, e.workload(ctx, "grow")); strings.Count(pods, "gpu=Running") != 2 {
				return fmt.Errorf("the RayJob's pods: %q", pods)
			}
			cluster = get(ctx, "rayjob", "grow", "-n", e.ns, "-o", "jsonpath={.status.rayClusterName}")
			return nil
		})
		e.refused([]string{"spec.workerGroupSpecs[0].replicas"}, "patch", "raycluster", cluster, "-n", e.ns, "--type=json",
			"-p", `[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":4}]`)
		e.refused([]string{"metadata.labels[berth.dev/queue-name]", "grow"}, "label", "raycluster", cluster, "-n", e.ns, "berth.dev/queue-name-")
		e.auditClean()
		table.add("RayJob", "grow the workers of the cluster KubeRay made for it, or take that cluster's queue label off", "refused, naming the field")
	})

	t.Run("RayCluster/delete --cascade=orphan", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("rayorphan", "", gpuQuota{flavor: e.flavor("h100"), gpus: "4"}))
		e.sampleGPUs(4)
		apply(t, fmt.Sprintf("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: orphaned, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n%s",
			e.ns, rayClusterSpec("  ", 4)))
		eventually(t, "the RayCluster's 4 workers running", 120*time.Second, func(ctx context.Context) error {
			if pods := e.podsOf(ctx, e.workload(ctx, "orphaned")); strings.Count(pods, "gpu=Running") != 4 {
				return fmt.Errorf("the RayCluster's pods: %q", pods)
			}
			return nil
		})
		if _, err := kubectl(t.Context(), "", "delete", "raycluster", "orphaned", "-n", e.ns, "--cascade=orphan"); err != nil {
			t.Fatal(err)
		}
		e.submit(jobSpec{name: "next", queue: "main", completions: 1, parallelism: 1, gpus: 4, runFor: "5s"})
		e.running("next", 1)
		eventually(t, "no orphaned pod of the RayCluster left", time.Minute, func(ctx context.Context) error {
			if out := get(ctx, "pods", "-n", e.ns, "-l", "ray.io/cluster=orphaned", "-o", "name"); out != "" {
				return fmt.Errorf("pods left: %s", out)
			}
			return nil
		})
		e.auditClean()
		table.add("RayCluster", "kubectl delete raycluster --cascade=orphan", "its pods stopped, the quota released once they are gone, the next job admitted")
	})
}
