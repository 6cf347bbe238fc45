package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestJobSetAdmittedAsOneWorkload runs a JobSet of a driver and two worker
// Jobs: one Workload holds the quota of all its pods, the JobSet runs once
// admitted, and its completion finishes the Workload.
func TestJobSetAdmittedAsOneWorkload(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("jobset", "", gpuQuota{flavor: e.flavor("h100"), gpus: "16"})
	e.localQueue("main", cq)
	replicated := func(name string, replicas, pods, gpus int) string {
		return fmt.Sprintf(`  - name: %s
    replicas: %d
    template:
      spec:
        parallelism: %d
        completions: %d
        template:
          metadata: {annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "10s"}}
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: registry.example/train:latest
              resources:
                requests: {cpu: "1", nvidia.com/gpu: "%d"}
                limits: {nvidia.com/gpu: "%d"}
`, name, replicas, pods, pods, gpus, gpus)
	}
	apply(t, fmt.Sprintf("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: train, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n  replicatedJobs:\n%s%s",
		e.ns, replicated("driver", 1, 1, 1), replicated("workers", 2, 2, 2)))

	var wl string
	eventually(t, "one admitted Workload for the JobSet", 90*time.Second, func(ctx context.Context) error {
		out := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.metadata.name}|{.status.conditions[?(@.type=="Admitted")].status}|{range .status.admission.podSetAssignments[*]}{.name}={.count} {end}{"\n"}{end}`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "|True|") || !strings.Contains(lines[0], "driver=1") || !strings.Contains(lines[0], "workers=4") {
			return fmt.Errorf("workloads: %q", out)
		}
		wl = strings.SplitN(lines[0], "|", 2)[0]
		return nil
	})
	eventually(t, "the JobSet's 5 pods running with the Workload's label", 90*time.Second, func(ctx context.Context) error {
		out := get(ctx, "pods", "-n", e.ns, "-l", "berth.dev/workload="+wl, "-o", "jsonpath={range .items[*]}{.status.phase} {end}")
		if n := strings.Count(out, "Running") + strings.Count(out, "Succeeded"); n != 5 {
			return fmt.Errorf("pods: %q", out)
		}
		return nil
	})
	eventually(t, "the Workload finished with the JobSet", 90*time.Second, func(ctx context.Context) error {
		if s := get(ctx, "wl", wl, "-n", e.ns, "-o", `jsonpath={.status.conditions[?(@.type=="Finished")].status}`); s != "True" {
			return fmt.Errorf("Finished is %q", s)
		}
		return nil
	})
}
