package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// groupWorkload is the name and pod count of the one Workload of pod group
// g in e's namespace, and its QuotaReserved message.
func (e *env) groupWorkload(ctx context.Context, g string) (name, count, message string, err error) {
	out := get(ctx, "workloads", "-n", e.ns, "-l", "berth.dev/pod-group-name="+g, "-o",
		`jsonpath={range .items[*]}{.metadata.name}|{.spec.podSets[0].count}|{.status.conditions[?(@.type=="QuotaReserved")].message}{"\n"}{end}`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || lines[0] == "" {
		return "", "", "", fmt.Errorf("group %s has %d Workloads: %q", g, len(lines), out)
	}
	f := strings.SplitN(lines[0], "|", 3)
	return f[0], f[1], f[2], nil
}

// TestStatefulSetAdmittedAsOneGroup runs a StatefulSet through the real
// StatefulSet controller, which creates its pods one at a time, each once
// the one before is ready: its replicas are one Workload, admitted with the
// first pod. Scaled past its quota, the group waits whole, none of its pods
// running; scaled back within it, all run again.
func TestStatefulSetAdmittedAsOneGroup(t *testing.T) {
	e := newEnv(t)
	e.sampleGPUs(8)
	serving := e.queue("serving", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("serving", serving)
	apply(t, fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: %s, labels: {berth.dev/queue-name: serving}}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: serve
        image: registry.example/serve:latest
        resources:
          requests: {cpu: "1", nvidia.com/gpu: "2"}
          limits: {nvidia.com/gpu: "2"}
`, e.ns))
	e.waitPods("db", 3, 0)
	_, count, _, err := e.groupWorkload(t.Context(), "db")
	if err != nil || count != "3" {
		t.Fatalf("the StatefulSet's Workload asks for %q pods (%v), want its 3 replicas", count, err)
	}

	if _, err := kubectl(t.Context(), "", "scale", "statefulset", "db", "-n", e.ns, "--replicas=5"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the group of 5 waiting whole", 90*time.Second, func(ctx context.Context) error {
		_, count, msg, err := e.groupWorkload(ctx, "db")
		if err != nil {
			return err
		}
		if count != "5" || !strings.Contains(msg, "needs 10 nvidia.com/gpu, 8 available") {
			return fmt.Errorf("Workload of %s pods: %q", count, msg)
		}
		if b, _, err := e.podCounts(ctx, "app=db"); err != nil || b != 0 {
			return fmt.Errorf("%d pods bound (%v)", b, err)
		}
		return nil
	})

	if _, err := kubectl(t.Context(), "", "scale", "statefulset", "db", "-n", e.ns, "--replicas=4"); err != nil {
		t.Fatal(err)
	}
	e.waitPods("db", 4, 0)
}

// TestLeaderWorkerSetGroupAdmittedWholeOrNotAtAll runs a LeaderWorkerSet
// through the real LeaderWorkerSet controller: each group, a leader and
// its workers, is one Workload. The quota holds one group of two: the
// first runs whole, the second waits whole, none of its pods running.
func TestLeaderWorkerSetGroupAdmittedWholeOrNotAtAll(t *testing.T) {
	e := newEnv(t)
	e.sampleGPUs(8)
	serving := e.queue("serving", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("serving", serving)
	apply(t, fmt.Sprintf(`apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: infer, namespace: %s, labels: {berth.dev/queue-name: serving}}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 3
    workerTemplate:
      spec:
        containers:
        - name: serve
          image: registry.example/serve:latest
          resources:
            requests: {cpu: "1", nvidia.com/gpu: "2"}
            limits: {nvidia.com/gpu: "2"}
`, e.ns))
	group := func(i int) string {
		return fmt.Sprintf("leaderworkerset.sigs.k8s.io/name=infer,leaderworkerset.sigs.k8s.io/group-index=%d", i)
	}
	// Which group goes first is the order of their Workloads: find the
	// one admitted.
	var first, second int
	eventually(t, "one group admitted", 90*time.Second, func(ctx context.Context) error {
		for i := range 2 {
			if b, _, err := e.podCounts(ctx, group(i)); err == nil && b == 3 {
				first, second = i, 1-i
				return nil
			}
		}
		return fmt.Errorf("no group has its 3 pods bound")
	})
	e.waitPods(group(first), 3, 0)
	e.waitPods(group(second), 0, 3)
	eventually(t, "the second group saying why it waits", 60*time.Second, func(ctx context.Context) error {
		_, count, msg, err := e.groupWorkload(ctx, fmt.Sprintf("infer-%d", second))
		if err != nil {
			return err
		}
		if count != "3" || !strings.Contains(msg, "needs 6 nvidia.com/gpu, 2 available") {
			return fmt.Errorf("Workload of %s pods: %q", count, msg)
		}
		return nil
	})
	t.Logf("the waiting group says: %s", e.gatedPodMessage(t, "leaderworkerset.sigs.k8s.io/name=infer"))
	// Admission hands a worker only Berth's labels, not its leader's: the
	// LeaderWorkerSet controller would take it for a leader, and its
	// StatefulSet would replace it again and again.
	if out := get(t.Context(), "events", "-n", e.ns, "--field-selector", "reason=SuccessfulDelete", "-o", "jsonpath={.items[*].message}"); out != "" {
		t.Errorf("pods of the LeaderWorkerSet were deleted: %s", out)
	}
}
