package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestQuotaAndWaiting(t *testing.T) {
	e := newEnv(t)
	h100 := e.flavor("h100")
	cq := e.queue("quota", "", gpuQuota{flavor: h100, gpus: "8"})
	e.localQueue("main", cq)
	e.job("first", "main", "", 2, 4, "")
	e.waitCondition("first", "Admitted", "True", "")
	eventually(t, "the first job's pods running on H100 nodes", 90*time.Second, func(ctx context.Context) error {
		out := get(ctx, "pods", "-n", e.ns, "-l", "job-name=first", "-o", "jsonpath={range .items[*]}{.spec.nodeName}:{.status.phase} {end}")
		if strings.Count(out, ":Running") != 2 || strings.Count(out, "h100-") != 2 {
			return fmt.Errorf("pods: %q", out)
		}
		return nil
	})
	e.job("second", "main", "", 1, 4, "")
	msg := e.waitPending("second", "flavor "+h100, "needs 4 nvidia.com/gpu, 0 available", "nominal 8, in use 8")
	t.Logf("the second job waits: %s", msg)
	if !e.suspended(t.Context(), "second") {
		t.Error("the waiting job is not suspended")
	}
	out, err := kubectl(t.Context(), "", "get", "cq", cq)
	if err != nil || !strings.Contains(out, "PENDING") {
		t.Fatalf("kubectl get cq: %v\n%s", err, out)
	}
}

func TestFlavorPreferenceAndSchedulingDirectives(t *testing.T) {
	e := newEnv(t)
	h100, a100 := e.flavor("h100"), e.flavor("a100")
	cq := e.queue("prefer", "", gpuQuota{flavor: h100, gpus: "8"}, gpuQuota{flavor: a100, gpus: "8"})
	e.localQueue("main", cq)
	e.job("on-h100", "main", "", 1, 8, "")
	e.waitCondition("on-h100", "Admitted", "True", "")
	e.job("on-a100", "main", "", 1, 8, "")
	e.waitCondition("on-a100", "Admitted", "True", "")
	eventually(t, "the second job's pod on an A100 node with the flavor's directives", 90*time.Second, func(ctx context.Context) error {
		out := get(ctx, "pods", "-n", e.ns, "-l", "job-name=on-a100", "-o",
			`jsonpath={.items[0].spec.nodeName}|{.items[0].spec.nodeSelector.gpu\.berth\.dev/family}|{.items[0].spec.tolerations[?(@.key=="berth.dev/e2e")].effect}|{.items[0].metadata.labels.berth\.dev/podset}`)
		if !strings.HasPrefix(out, "a100-") || !strings.Contains(out, "|a100|NoSchedule|main") {
			return fmt.Errorf("pod: %q", out)
		}
		return nil
	})
}

func TestMissingLocalQueueNeverRuns(t *testing.T) {
	e := newEnv(t)
	e.job("lost", "nowhere", "", 1, 1, "")
	e.waitPending("lost", "LocalQueue nowhere does not exist in namespace "+e.ns)
	time.Sleep(2 * time.Second)
	if !e.suspended(t.Context(), "lost") {
		t.Fatal("a job without a queue runs")
	}
	if pods := get(t.Context(), "pods", "-n", e.ns, "-o", "name"); pods != "" {
		t.Fatalf("pods of a job without a queue: %s", pods)
	}
}

func TestDeletingAJobFreesItsQuota(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("free", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.job("holder", "main", "", 1, 8, "")
	e.waitCondition("holder", "Admitted", "True", "")
	e.job("next", "main", "", 1, 8, "")
	e.waitPending("next", "needs 8 nvidia.com/gpu")
	if _, err := kubectl(t.Context(), "", "delete", "job", "holder", "-n", e.ns); err != nil {
		t.Fatal(err)
	}
	e.waitCondition("next", "Admitted", "True", "")
}

// TestDefaultLocalQueueTakesUnlabelledJobs: in a namespace with a LocalQueue
// named default, a Job without the queue label cannot run around the
// quota; it is queued there.
func TestDefaultLocalQueueTakesUnlabelledJobs(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("defaulted", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("default", cq)
	unlabelled := func(name string) string {
		return strings.Replace(jobManifest(e.ns, name, "none", "", 1, 8, ""), "berth.dev/queue-name: none", "app: "+name, 1)
	}
	apply(t, unlabelled("first"))
	e.waitCondition("first", "Admitted", "True", "")
	apply(t, unlabelled("second"))
	e.waitPending("second", "needs 8 nvidia.com/gpu")
	if got := get(t.Context(), "job", "second", "-n", e.ns, "-o", `jsonpath={.metadata.labels.berth\.dev/queue-name}`); got != "default" {
		t.Errorf("the unlabelled job's queue label = %q, want default", got)
	}
	if !e.suspended(t.Context(), "second") {
		t.Error("the unlabelled job beyond the quota is not suspended")
	}
}
