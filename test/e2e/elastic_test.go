package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// jobWorkloads are the Workload of the job name (its owner) and the slice
// that grows it, "" for one that does not exist; the slice's waiting
// message.
func (e *env) jobWorkloads(ctx context.Context, name string) (wl, slice, waiting string) {
	out := get(ctx, "wl", "-n", e.ns, "-o", fmt.Sprintf(
		`jsonpath={range .items[?(@.metadata.ownerReferences[0].name=="%s")]}{.metadata.name}|{.metadata.labels.berth\.dev/slice-of}|{.status.conditions[?(@.type=="QuotaReserved")].message}{"\n"}{end}`, name))
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, "|", 3)
		switch {
		case len(parts) < 3:
		case parts[1] == "":
			wl = parts[0]
		default:
			slice, waiting = parts[0], parts[2]
		}
	}
	return wl, slice, waiting
}

// admittedPods is the number of pods Workload wl holds quota for in
// podset.
func (e *env) admittedPods(ctx context.Context, wl, podSet string) string {
	return get(ctx, "wl", wl, "-n", e.ns, "-o", fmt.Sprintf(`jsonpath={.status.admission.podSetAssignments[?(@.name=="%s")].count}`, podSet))
}

// podsByPhase lists the UIDs of the pods of a podset of Workload wl that
// run on a node, and the number that wait at the elastic gate.
func (e *env) podsByPhase(ctx context.Context, wl, podSet string) (running []string, gated int) {
	out := get(ctx, "pods", "-n", e.ns, "-l", "berth.dev/workload="+wl+",berth.dev/podset="+podSet, "-o",
		`jsonpath={range .items[*]}{.metadata.uid}|{.status.phase}|{.spec.nodeName}|{.spec.schedulingGates[*].name}|{.metadata.deletionTimestamp}{"\n"}{end}`)
	for _, line := range strings.Split(out, "\n") {
		parts := strings.Split(line, "|")
		switch {
		case len(parts) < 5 || parts[4] != "":
		case strings.Contains(parts[3], "berth.dev/elastic"):
			gated++
		case parts[1] == "Running" && strings.HasPrefix(parts[2], "h100-"):
			running = append(running, parts[0])
		}
	}
	return running, gated
}

// TestElasticRayClusterScalesWithKubeRay scales an elastic RayCluster,
// run by KubeRay's operator, from 2 workers of one GPU to 4 and then to 1
// in a ClusterQueue of 4 GPUs. Grown while a Job holds 1 GPU, its 2 new
// workers wait at their gate as a slice that says what it needs, while the
// head and the 2 running workers go on; once the Job is gone the slice is
// admitted and all 4 workers run, the first 2 the same pods as before.
// Shrunk to 1, its Workload gives the quota of the 3 removed workers back
// once they are gone, and a Job of 3 GPUs runs beside it. The GPUs that
// bound pods hold never exceed the quota.
func TestElasticRayClusterScalesWithKubeRay(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("elastic", "", gpuQuota{flavor: e.flavor("h100"), gpus: "4"})
	e.localQueue("main", cq)
	e.sampleGPUs(4)
	apply(t, fmt.Sprintf("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: serve, namespace: %s, labels: {berth.dev/queue-name: main}, annotations: {berth.dev/elastic: \"true\"}}\nspec:\n%s",
		e.ns, rayClusterSpec("  ", 2)))

	var wl string
	var first []string
	eventually(t, "the RayCluster admitted, its head and 2 workers running", 120*time.Second, func(ctx context.Context) error {
		wl, _, _ = e.jobWorkloads(ctx, "serve")
		if wl == "" {
			return fmt.Errorf("no Workload for the RayCluster")
		}
		head, _ := e.podsByPhase(ctx, wl, "head")
		first, _ = e.podsByPhase(ctx, wl, "gpu")
		if len(head) != 1 || len(first) != 2 {
			return fmt.Errorf("pods of %s: %q", wl, e.podsOf(ctx, wl))
		}
		return nil
	})
	e.job("filler", "main", "", 1, 1, "")
	e.waitCondition("filler", "Admitted", "True", "")

	if _, err := kubectl(t.Context(), "", "patch", "raycluster", "serve", "-n", e.ns, "--type=json",
		"-p", `[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":4}]`); err != nil {
		t.Fatalf("growing the elastic RayCluster: %v", err)
	}
	eventually(t, "2 more workers waiting at their gate as a slice that needs 2 GPUs, the 2 workers running on", 90*time.Second, func(ctx context.Context) error {
		_, slice, waiting := e.jobWorkloads(ctx, "serve")
		if slice == "" || !strings.Contains(waiting, "needs 2 nvidia.com/gpu, 1 available") {
			return fmt.Errorf("slice %q waits with %q", slice, waiting)
		}
		running, gated := e.podsByPhase(ctx, wl, "gpu")
		if gated != 2 || !sameUIDs(running, first) {
			return fmt.Errorf("%d gated, running %v (first %v): %q", gated, running, first, e.podsOf(ctx, wl))
		}
		return nil
	})

	if _, err := kubectl(t.Context(), "", "delete", "job", "filler", "-n", e.ns, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slice admitted and taken into the Workload, 4 workers running, the first 2 never stopped", 120*time.Second, func(ctx context.Context) error {
		if _, slice, _ := e.jobWorkloads(ctx, "serve"); slice != "" {
			return fmt.Errorf("slice %s still there", slice)
		}
		if n := e.admittedPods(ctx, wl, "gpu"); n != "4" {
			return fmt.Errorf("Workload %s admitted for %s workers", wl, n)
		}
		running, gated := e.podsByPhase(ctx, wl, "gpu")
		if len(running) != 4 || gated != 0 {
			return fmt.Errorf("%d running, %d gated: %q", len(running), gated, e.podsOf(ctx, wl))
		}
		for _, uid := range first {
			if !slices.Contains(running, uid) {
				return fmt.Errorf("worker %s, running before the slice, is gone: %v", uid, running)
			}
		}
		return nil
	})

	if _, err := kubectl(t.Context(), "", "patch", "raycluster", "serve", "-n", e.ns, "--type=json",
		"-p", `[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":1}]`); err != nil {
		t.Fatalf("shrinking the elastic RayCluster: %v", err)
	}
	eventually(t, "the Workload shrunk to 1 worker once the 3 removed are gone", 120*time.Second, func(ctx context.Context) error {
		if n := e.admittedPods(ctx, wl, "gpu"); n != "1" {
			running, _ := e.podsByPhase(ctx, wl, "gpu")
			return fmt.Errorf("Workload %s admitted for %s workers, %d running", wl, n, len(running))
		}
		return nil
	})
	e.job("after", "main", "", 1, 3, "")
	e.waitCondition("after", "Admitted", "True", "")
	events := get(t.Context(), "events", "-n", e.ns, "--field-selector", "involvedObject.name=serve", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
	for _, want := range []string{"QueuedSlice: The job asks for 2 pods of podset gpu more", "ScaledUp: Admitted slice", "ScaledDown: 3 pods of podset gpu were removed and have ended"} {
		if !strings.Contains(events, want) {
			t.Errorf("no event %q on the RayCluster: %s", want, events)
		}
	}
}

// TestElasticJobScalesWithTheJobController raises and lowers the
// parallelism of an elastic Job that the real Job controller runs, in a
// ClusterQueue of 4 GPUs: from 2 pods to 3, whose third runs once its
// slice is admitted while the first 2 go on, then to 1, whose quota is
// given back once the Job controller's removed pods are gone; a Job of 3
// GPUs then runs beside it. A Job that is not elastic is refused the same
// raise, naming the field and the annotation. The GPUs that bound pods
// hold never exceed the quota.
func TestElasticJobScalesWithTheJobController(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("elasticjob", "", gpuQuota{flavor: e.flavor("h100"), gpus: "4"})
	e.localQueue("main", cq)
	e.sampleGPUs(4)
	manifest := strings.Replace(jobManifest(e.ns, "grow", "main", "", 2, 1, ""), "metadata: {name: grow,", "metadata: {annotations: {berth.dev/elastic: \"true\"}, name: grow,", 1)
	apply(t, strings.Replace(manifest, "  completions: 2", "  completions: 100", 1))
	var wl string
	var first []string
	eventually(t, "the elastic Job's 2 pods running", 90*time.Second, func(ctx context.Context) error {
		wl, _, _ = e.jobWorkloads(ctx, "grow")
		first, _ = e.podsByPhase(ctx, wl, "main")
		if wl == "" || len(first) != 2 {
			return fmt.Errorf("Workload %q, pods %q", wl, e.podsOf(ctx, wl))
		}
		return nil
	})
	apply(t, strings.Replace(jobManifest(e.ns, "rigid", "main", "", 1, 1, ""), "  completions: 1\n", "  completions: 100\n", 1))
	e.waitCondition("rigid", "Admitted", "True", "")
	out, err := kubectl(t.Context(), "", "patch", "job", "rigid", "-n", e.ns, "--type=merge", "-p", `{"spec":{"parallelism":2}}`)
	if err == nil || !strings.Contains(err.Error(), "spec.parallelism") || !strings.Contains(err.Error(), "berth.dev/elastic") {
		t.Errorf("raising a running Job that is not elastic: %q, %v; want it refused, naming spec.parallelism and berth.dev/elastic", out, err)
	}

	if _, err := kubectl(t.Context(), "", "patch", "job", "grow", "-n", e.ns, "--type=merge", "-p", `{"spec":{"parallelism":3}}`); err != nil {
		t.Fatalf("raising the elastic Job's parallelism: %v", err)
	}
	eventually(t, "3 pods running, the first 2 never stopped", 90*time.Second, func(ctx context.Context) error {
		running, gated := e.podsByPhase(ctx, wl, "main")
		if len(running) != 3 || gated != 0 || e.admittedPods(ctx, wl, "main") != "3" {
			return fmt.Errorf("%d running, %d gated, admitted %s: %q", len(running), gated, e.admittedPods(ctx, wl, "main"), e.podsOf(ctx, wl))
		}
		for _, uid := range first {
			if !slices.Contains(running, uid) {
				return fmt.Errorf("pod %s, running before the slice, is gone: %v", uid, running)
			}
		}
		return nil
	})

	if _, err := kubectl(t.Context(), "", "patch", "job", "grow", "-n", e.ns, "--type=merge", "-p", `{"spec":{"parallelism":1}}`); err != nil {
		t.Fatalf("lowering the elastic Job's parallelism: %v", err)
	}
	eventually(t, "the Workload shrunk to 1 pod once the 2 removed are gone", 90*time.Second, func(ctx context.Context) error {
		if n := e.admittedPods(ctx, wl, "main"); n != "1" {
			return fmt.Errorf("Workload %s admitted for %s pods: %q", wl, n, e.podsOf(ctx, wl))
		}
		return nil
	})
	if _, err := kubectl(t.Context(), "", "delete", "job", "rigid", "-n", e.ns, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	e.job("after", "main", "", 1, 3, "")
	e.waitCondition("after", "Admitted", "True", "")
}

// sameUIDs reports whether a and b hold the same UIDs.
func sameUIDs(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(uid string) bool { return !slices.Contains(b, uid) })
}

// elasticEscapes is the escape matrix's row for elastic jobs: with 2 pods
// running and a third waiting at its gate for a slice that does not fit,
// the owner removes the gate from the waiting pod, takes the annotation
// off, and deletes the Job keeping its pods; each is refused, naming the
// field, or stops what ran, and the slice goes with it.
func elasticEscapes(t *testing.T, table *escapeTable) {
	t.Run("Job/elastic: ungate a waiting pod, drop the annotation, orphan the pods", func(t *testing.T) {
		e := newEnv(t)
		e.localQueue("main", e.queue("elastic", "", gpuQuota{flavor: e.flavor("h100"), gpus: "2"}))
		e.sampleGPUs(2)
		manifest := strings.Replace(jobManifest(e.ns, "grow", "main", "", 2, 1, ""), "metadata: {name: grow,", "metadata: {annotations: {berth.dev/elastic: \"true\"}, name: grow,", 1)
		apply(t, strings.Replace(manifest, "  completions: 2", "  completions: 100", 1))
		var wl, waiting string
		eventually(t, "2 pods running, a third waiting at its gate for its slice", 90*time.Second, func(ctx context.Context) error {
			wl, _, _ = e.jobWorkloads(ctx, "grow")
			if running, _ := e.podsByPhase(ctx, wl, "main"); wl == "" || len(running) != 2 {
				return fmt.Errorf("Workload %q: %q", wl, e.podsOf(ctx, wl))
			}
			if get(ctx, "job", "grow", "-n", e.ns, "-o", "jsonpath={.spec.parallelism}") != "3" {
				if _, err := kubectl(ctx, "", "patch", "job", "grow", "-n", e.ns, "--type=merge", "-p", `{"spec":{"parallelism":3}}`); err != nil {
					return err
				}
			}
			_, slice, msg := e.jobWorkloads(ctx, "grow")
			if _, gated := e.podsByPhase(ctx, wl, "main"); gated != 1 || !strings.Contains(msg, "needs 1 nvidia.com/gpu, 0 available") {
				return fmt.Errorf("%d gated, slice %q waits with %q", gated, slice, msg)
			}
			waiting = get(ctx, "pods", "-n", e.ns, "-l", "berth.dev/workload="+wl, "-o", `jsonpath={.items[?(@.spec.schedulingGates)].metadata.name}`)
			return nil
		})
		e.refused([]string{"spec.schedulingGates", "only Berth removes the gate berth.dev/elastic"},
			"patch", "pod", waiting, "-n", e.ns, "--type=json", "-p", `[{"op":"remove","path":"/spec/schedulingGates"}]`)
		e.refused([]string{"metadata.annotations[berth.dev/elastic]", "cannot change while it has Workload"},
			"annotate", "job", "grow", "-n", e.ns, "berth.dev/elastic-")
		e.auditClean()
		if _, err := kubectl(t.Context(), "", "delete", "job", "grow", "-n", e.ns, "--cascade=orphan"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the kept pods stopped and the Workload and its slice gone", 90*time.Second, func(ctx context.Context) error {
			if out := get(ctx, "wl", "-n", e.ns, "-o", "name"); out != "" {
				return fmt.Errorf("workloads left: %q", out)
			}
			if out := get(ctx, "pods", "-n", e.ns, "-l", "berth.dev/workload="+wl, "--field-selector=status.phase=Running", "-o", "name"); out != "" {
				return fmt.Errorf("pods still running: %q", out)
			}
			return nil
		})
		table.add("Job (elastic)", "remove the gate berth.dev/elastic from a pod waiting for its slice; take berth.dev/elastic off; delete --cascade=orphan",
			"refused, naming spec.schedulingGates and the annotation; the kept pods stopped, the Workload and its slice deleted")
	})
}
