package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// cloudPods is how many of a job's pods run on nodes that the test double
// of cluster-autoscaler added, and the requests their annotation names.
func (e *env) cloudPods(ctx context.Context, job string) (int, string) {
	out := get(ctx, "pods", "-n", e.ns, "-l", "job-name="+job, "-o",
		`jsonpath={range .items[?(@.status.phase=="Running")]}{.spec.nodeName}|{.metadata.annotations.autoscaling\.x-k8s\.io/consume-provisioning-request}{"\n"}{end}`)
	n, requests := 0, map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		node, request, _ := strings.Cut(line, "|")
		if strings.HasPrefix(node, "cloud-") {
			n++
			requests[request] = true
		}
	}
	var names []string
	for r := range requests {
		names = append(names, r)
	}
	return n, strings.Join(names, ",")
}

// TestCapacityFromTheCloud runs Berth's provisioning admission check
// against the test double of cluster-autoscaler in the local cluster: a
// queue with quota in a flavor that has no node gets a ProvisioningRequest
// per workload; nodes appear and the job's pods run on them, marked with
// the request, also when the controller is killed between the reservation
// and the request's answer. Capacity revoked evicts the workload, which is queued again
// and runs on nodes of a new request. Deleted, its requests and nodes go.
// Out of capacity, a request fails, is retried after the backoff, fails
// again and the workload is rejected, saying why.
func TestCapacityFromTheCloud(t *testing.T) {
	e := newEnv(t)
	flavor := e.flavor("cloud-" + e.ns)
	cfg, check := e.name("cloud"), e.name("provision")
	e.clusterScoped("provisioningrequestconfig", cfg, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: ProvisioningRequestConfig
metadata: {name: %s}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  retryStrategy: {backoffLimitCount: 1, backoffBaseSeconds: 1, backoffMaxSeconds: 2}
`, cfg))
	e.clusterScoped("admissioncheck", check, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: AdmissionCheck
metadata: {name: %s}
spec:
  controllerName: berth.dev/provisioning-request
  parameters: {apiGroup: berth.dev, kind: ProvisioningRequestConfig, name: %s}
`, check, cfg))
	q := e.queue("cloud", "  admissionChecks: ["+check+"]\n", gpuQuota{flavor: flavor, gpus: "16"})
	e.localQueue("main", q)

	e.job("finetune", "main", "", 2, 8, "")
	e.waitCondition("finetune", "QuotaReserved", "True", "")
	// Killed between the reservation and the check's result, the
	// controller makes no second request when it comes back.
	if err := crashAndRestart(); err != nil {
		t.Fatal(err)
	}
	wl := e.workload(t.Context(), "finetune")
	first := wl + "-" + check + "-1"
	eventually(t, "finetune's 2 pods on 2 new nodes, using request "+first, 90*time.Second, func(ctx context.Context) error {
		if n, requests := e.cloudPods(ctx, "finetune"); n != 2 || requests != first {
			return fmt.Errorf("%d pods on cloud nodes, using %q", n, requests)
		}
		return nil
	})
	if out := get(t.Context(), "provreq", "-n", e.ns, "-o", "name"); strings.TrimSpace(out) != "provisioningrequest.autoscaling.x-k8s.io/"+first {
		t.Errorf("requests after the crash: %q, want only %s", out, first)
	}

	revoked := `[{"op":"add","path":"/status/conditions/-","value":{"type":"CapacityRevoked","status":"True","reason":"Revoked","message":"the zone is being drained","lastTransitionTime":"2026-01-01T00:00:00Z"}}]`
	if _, err := kubectl(t.Context(), "", "patch", "provreq", first, "-n", e.ns, "--subresource=status", "--type=json", "-p", revoked); err != nil {
		t.Fatal(err)
	}
	second := wl + "-" + check + "-2"
	eventually(t, "finetune evicted, queued again and running on the nodes of "+second, 120*time.Second, func(ctx context.Context) error {
		if _, err := kubectl(ctx, "", "get", "provreq", first, "-n", e.ns); err == nil {
			return fmt.Errorf("request %s still there", first)
		}
		if n, requests := e.cloudPods(ctx, "finetune"); n != 2 || requests != second {
			return fmt.Errorf("%d pods on cloud nodes, using %q", n, requests)
		}
		return nil
	})

	if _, err := kubectl(t.Context(), "", "delete", "job", "finetune", "-n", e.ns, "--cascade=foreground", "--wait=true"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "finetune's requests and nodes gone", 90*time.Second, func(ctx context.Context) error {
		if out := get(ctx, "provreq", "-n", e.ns, "-o", "name"); out != "" {
			return fmt.Errorf("requests left: %s", out)
		}
		if out := get(ctx, "nodes", "-l", "autoscaling.x-k8s.io/provisioning-request="+second, "-o", "name"); out != "" {
			return fmt.Errorf("nodes left: %s", out)
		}
		return nil
	})

	apply(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cloud-capacity, namespace: berth-system}\ndata: {outOfCapacity: \"true\"}\n")
	t.Cleanup(func() {
		_, _ = kubectl(context.Background(), "", "delete", "configmap", "cloud-capacity", "-n", "berth-system")
	})
	e.job("unlucky", "main", "", 1, 8, "")
	msg := e.waitPending("unlucky", "Rejected by admission check "+check, "failed, 2 failures, more than the 1 retries allowed", "out of capacity")
	t.Logf("unlucky: %s", msg)
	if active := get(t.Context(), "wl", e.workload(t.Context(), "unlucky"), "-n", e.ns, "-o", "jsonpath={.spec.active}"); active != "false" {
		t.Errorf("unlucky's workload spec.active is %q, want false", active)
	}
	if !e.suspended(t.Context(), "unlucky") {
		t.Error("unlucky runs")
	}
}
