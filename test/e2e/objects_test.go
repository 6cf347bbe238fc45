package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// flavor creates a ResourceFlavor of the nodes with the given GPU family.
func (e *env) flavor(family string) string {
	name := e.name(family)
	e.clusterScoped("resourceflavor", name, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: ResourceFlavor
metadata: {name: %s}
spec:
  nodeLabels: {gpu.berth.dev/family: %s}
  tolerations: [{key: berth.dev/e2e, operator: Exists, effect: NoSchedule}]
`, name, family))
	return name
}

// gpuQuota is one flavor's quota line for the queue YAML.
type gpuQuota struct {
	flavor, gpus, borrowingLimit string
}

// queue creates a ClusterQueue with GPU quota in the given flavors, in
// order, and a LocalQueue "main" of it in the test's namespace.
func (e *env) queue(base, extraSpec string, quotas ...gpuQuota) string {
	name := e.name(base)
	var flavors strings.Builder
	for _, q := range quotas {
		limit := ""
		if q.borrowingLimit != "" {
			limit = ", borrowingLimit: " + q.borrowingLimit
		}
		fmt.Fprintf(&flavors, `    - name: %s
      resources:
      - {name: cpu, nominalQuota: "1000"}
      - {name: nvidia.com/gpu, nominalQuota: %q%s}
`, q.flavor, q.gpus, limit)
	}
	e.clusterScoped("clusterqueue", name, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: ClusterQueue
metadata: {name: %s}
spec:
  namespaceSelector: {}
%s  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
%s`, name, extraSpec, flavors.String()))
	return name
}

// localQueue creates a LocalQueue in the test's namespace.
func (e *env) localQueue(name, clusterQueue string) {
	apply(e.t, fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: LocalQueue\nmetadata: {name: %s, namespace: %s}\nspec: {clusterQueue: %s}\n", name, e.ns, clusterQueue))
}

// priorityClass creates a WorkloadPriorityClass.
func (e *env) priorityClass(base string, value int) string {
	name := e.name(base)
	e.clusterScoped("workloadpriorityclass", name, fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: WorkloadPriorityClass\nmetadata: {name: %s}\nvalue: %d\n", name, value))
	return name
}

// job submits a Job of pods pods with gpus GPUs each to queue, running
// for duration once admitted ("" runs until deleted).
func (e *env) job(name, queue, priorityClass string, pods, gpus int, duration string) {
	apply(e.t, jobManifest(e.ns, name, queue, priorityClass, pods, gpus, duration))
}

// jobManifest is the YAML of the Job that job submits.
func jobManifest(ns, name, queue, priorityClass string, pods, gpus int, duration string) string {
	annotations := "{}"
	if duration != "" {
		annotations = fmt.Sprintf("{pod-complete.stage.kwok.x-k8s.io/delay: %q}", duration)
	}
	return jobOf(ns, name, queue, priorityClass, pods, gpus, annotations, "{}")
}

// jobOf is the YAML of a Job of pods pods with gpus GPUs each, in queue
// and priority class class ("" for none), with the pod template's
// annotations and node selector (YAML maps).
func jobOf(ns, name, queue, class string, pods, gpus int, annotations, nodeSelector string) string {
	labels := "berth.dev/queue-name: " + queue
	if class != "" {
		labels += ", berth.dev/priority-class: " + class
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  parallelism: %d
  completions: %d
  template:
    metadata: {annotations: %s}
    spec:
      restartPolicy: Never
      nodeSelector: %s
      containers:
      - name: main
        image: registry.example/e2e:latest
        resources:
          requests: {cpu: "1", nvidia.com/gpu: "%d"}
          limits: {nvidia.com/gpu: "%d"}
`, name, ns, labels, pods, pods, annotations, nodeSelector, gpus, gpus)
}

// workload is the name of a job's Workload, "" until it exists.
func (e *env) workload(ctx context.Context, job string) string {
	return get(ctx, "wl", "-n", e.ns, "-o", fmt.Sprintf(`jsonpath={.items[?(@.metadata.ownerReferences[0].name=="%s")].metadata.name}`, job))
}

// condition is a Workload condition's status, reason and message.
func (e *env) condition(ctx context.Context, job, typ string) (string, string, string) {
	wl := e.workload(ctx, job)
	if wl == "" {
		return "", "", ""
	}
	out := get(ctx, "wl", wl, "-n", e.ns, "-o", fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%s")].status}|{.status.conditions[?(@.type=="%s")].reason}|{.status.conditions[?(@.type=="%s")].message}`, typ, typ, typ))
	parts := strings.SplitN(out, "|", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// waitCondition waits until a job's Workload has a condition with status
// (and, when not empty, reason).
func (e *env) waitCondition(job, typ, status, reason string) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("%s of job %s to be %s %s", typ, job, status, reason), 90*time.Second, func(ctx context.Context) error {
		s, r, m := e.condition(ctx, job, typ)
		if s != status || (reason != "" && r != reason) {
			return fmt.Errorf("%s is %q (%s: %s)", typ, s, r, m)
		}
		return nil
	})
}

// waitPending waits until a job's Workload waits with a message that
// contains every part.
func (e *env) waitPending(job string, parts ...string) string {
	e.t.Helper()
	return e.waitPendingWithin(90*time.Second, job, parts...)
}

// waitPendingWithin is waitPending that fails after timeout.
func (e *env) waitPendingWithin(timeout time.Duration, job string, parts ...string) string {
	e.t.Helper()
	var msg string
	eventually(e.t, "job "+job+" waiting", timeout, func(ctx context.Context) error {
		var s string
		s, _, msg = e.condition(ctx, job, "QuotaReserved")
		if s != "False" {
			return fmt.Errorf("QuotaReserved is %q: %s", s, msg)
		}
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				return fmt.Errorf("message %q lacks %q", msg, p)
			}
		}
		return nil
	})
	return msg
}

// suspended reports whether a job is suspended.
func (e *env) suspended(ctx context.Context, job string) bool {
	return get(ctx, "job", job, "-n", e.ns, "-o", "jsonpath={.spec.suspend}") == "true"
}

// groupPodOf is the YAML of pod name of pod group group, of total pods, in
// queue main, asking for gpus GPUs.
func groupPodOf(ns, name, group string, total int, gpus string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels: {berth.dev/queue-name: main, berth.dev/pod-group-name: %s}
  annotations: {berth.dev/pod-group-total-count: "%d"}
spec:
  restartPolicy: Never
  containers: [{name: c, image: registry.example/e2e:latest, resources: {requests: {nvidia.com/gpu: %q}, limits: {nvidia.com/gpu: %q}}}]
`, name, ns, group, total, gpus, gpus)
}
