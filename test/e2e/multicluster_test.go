package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// localWorker is worker cluster i of the local cluster
// (hack/local-worker.sh): its own control plane, kwok nodes and Berth.
type localWorker int

func (w localWorker) name() string { return fmt.Sprintf("worker-%d", int(w)) }

func (w localWorker) kubeconfig() string {
	return filepath.Join(root, "_output", "local", w.name(), "kubeconfig")
}

// script runs hack/local-worker.sh verb for the worker.
func (w localWorker) script(t testing.TB, verb string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "hack", "local-worker.sh"), verb, fmt.Sprint(int(w)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/local-worker.sh %s %d: %v\n%s", verb, int(w), err, out)
	}
}

func (w localWorker) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	return kubectlAt(ctx, w.kubeconfig(), stdin, args...)
}

func (w localWorker) apply(t testing.TB, yaml string) {
	t.Helper()
	if _, err := w.kubectl(t.Context(), yaml, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// get reads a jsonpath in the worker, "" when it cannot.
func (w localWorker) get(ctx context.Context, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := w.kubectl(ctx, "", append([]string{"get"}, args...)...)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// withWorkers starts worker clusters 1 and 2 (make local-up WORKERS=2
// may have), and removes at the end those it started.
func withWorkers(t *testing.T) []localWorker {
	workers := []localWorker{1, 2}
	for _, w := range workers {
		if _, err := os.Stat(w.kubeconfig()); err == nil && w.get(t.Context(), "--raw", "/readyz") == "ok" {
			continue
		}
		w.script(t, "up")
		t.Cleanup(func() {
			cmd := exec.Command(filepath.Join(root, "hack", "local-worker.sh"), "down", fmt.Sprint(int(w)))
			_ = cmd.Run()
		})
	}
	return workers
}

// workerQueue makes, in the worker, the test's namespace, a flavor of its
// H100 nodes, and a ClusterQueue of gpus GPUs with LocalQueue main.
func (e *env) workerQueue(w localWorker, gpus int) {
	e.t.Helper()
	flavor, cq := e.name("h100"), e.name("gpus")
	w.apply(e.t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: berth.dev/v1alpha1
kind: ResourceFlavor
metadata: {name: %[2]s}
spec:
  nodeLabels: {gpu.berth.dev/family: h100}
---
apiVersion: berth.dev/v1alpha1
kind: ClusterQueue
metadata: {name: %[3]s}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: %[2]s
      resources:
      - {name: cpu, nominalQuota: "1000"}
      - {name: nvidia.com/gpu, nominalQuota: "%[4]d"}
---
apiVersion: berth.dev/v1alpha1
kind: LocalQueue
metadata: {name: main, namespace: %[1]s}
spec: {clusterQueue: %[3]s}
`, e.ns, flavor, cq, gpus))
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = w.kubectl(ctx, "", "delete", "namespace", e.ns, "--wait=false")
		_, _ = w.kubectl(ctx, "", "delete", "pods", "--all", "-n", e.ns, "--grace-period=0", "--force")
		_, _ = w.kubectl(ctx, "", "delete", "clusterqueue", cq, "--wait=false")
		_, _ = w.kubectl(ctx, "", "delete", "resourceflavor", flavor, "--wait=false")
	})
}

// runningIn is the number of Running pods of job in the worker that are
// not being deleted, -1 when the worker does not answer. A pod being
// deleted is the worker's kubelet's to stop: once Berth deleted it, how
// soon it ends is not Berth's.
func (e *env) runningIn(ctx context.Context, w localWorker, job string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := w.kubectl(ctx, "", "get", "pods", "-n", e.ns, "-l", "job-name="+job, "--field-selector=status.phase=Running",
		"-o", `jsonpath={range .items[*]}{.metadata.deletionTimestamp}/{end}`)
	if err != nil {
		return -1
	}
	return strings.Count(out, "/") - strings.Count(out, "Z/")
}

// dispatchedTo waits until the manager's Workload of job was dispatched to
// one of the workers, and returns it.
func (e *env) dispatchedTo(job string, workers ...localWorker) localWorker {
	e.t.Helper()
	var to localWorker
	eventually(e.t, "job "+job+" dispatched to one of "+fmt.Sprint(workers), 150*time.Second, func(ctx context.Context) error {
		wl := e.workload(ctx, job)
		cluster := get(ctx, "wl", wl, "-n", e.ns, "-o", "jsonpath={.status.clusterName}")
		for _, w := range workers {
			if cluster == w.name() {
				to = w
				return nil
			}
		}
		return fmt.Errorf("workload %q: clusterName %q, checks %s", wl, cluster, get(ctx, "wl", wl, "-n", e.ns, "-o", "jsonpath={.status.admissionChecks}"))
	})
	return to
}

// runsIn waits until n pods of job run in the worker.
func (e *env) runsIn(w localWorker, job string, n int) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("%d pods of %s running in %s", n, job, w.name()), 90*time.Second, func(ctx context.Context) error {
		if got := e.runningIn(ctx, w, job); got != n {
			return fmt.Errorf("%d running", got)
		}
		return nil
	})
}

// goneFrom waits until the worker has no copy of job.
func (e *env) goneFrom(w localWorker, job string) {
	e.t.Helper()
	eventually(e.t, "no copy of "+job+" in "+w.name(), 90*time.Second, func(ctx context.Context) error {
		out, err := w.kubectl(ctx, "", "get", "job", job, "-n", e.ns, "--ignore-not-found", "-o", "name")
		if err != nil || strings.TrimSpace(out) != "" {
			return fmt.Errorf("copy %q (%v)", strings.TrimSpace(out), err)
		}
		return nil
	})
}

// TestMultiClusterDispatch runs the manager (the local cluster) and two
// worker clusters, each with its own control plane, kwok nodes and Berth.
// A job too large for worker-1's quota runs in worker-2, its status on the
// manager's Job; so does a pod group (dispatchGroup). A job's owner cannot
// start its copies nor keep them by orphaning the job (copyEscapes). A short job finishes
// there and here. Then the worker of
// a running job is killed: the job runs again in the other, and when the
// killed worker is back its stale copy is deleted. A sampler of both
// workers' pods checks that the job never runs in both at once while both
// answer.
func TestMultiClusterDispatch(t *testing.T) {
	workers := withWorkers(t)
	e := newEnv(t)
	e.workerQueue(workers[0], 4)
	e.workerQueue(workers[1], 16)
	config, check := e.name("workers"), e.name("dispatch")
	e.clusterScoped("multiclusterconfig", config, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: MultiClusterConfig
metadata: {name: %s}
spec: {clusters: [%s, %s]}
`, config, workers[0].name(), workers[1].name()))
	e.clusterScoped("admissioncheck", check, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: AdmissionCheck
metadata: {name: %s}
spec:
  controllerName: berth.dev/multicluster
  parameters: {apiGroup: berth.dev, kind: MultiClusterConfig, name: %s}
`, check, config))
	cq := e.queue("dispatch", "  admissionChecks: ["+check+"]\n", gpuQuota{flavor: e.flavor("h100"), gpus: "32"})
	e.localQueue("main", cq)
	eventually(t, "the ClusterQueue active", 60*time.Second, func(ctx context.Context) error {
		if s := get(ctx, "clusterqueue", cq, "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`); s != "True" {
			return fmt.Errorf("active %q", s)
		}
		return nil
	})

	// Too large for worker-1: worker-2.
	e.job("big", "main", "", 2, 4, "")
	if by := get(t.Context(), "job", "big", "-n", e.ns, "-o", "jsonpath={.spec.managedBy}"); by != "berth.dev/multicluster" {
		t.Fatalf("spec.managedBy %q", by)
	}
	if to := e.dispatchedTo("big", workers...); to != workers[1] {
		t.Fatalf("dispatched to %s, want %s", to.name(), workers[1].name())
	}
	e.runsIn(workers[1], "big", 2)
	e.goneFrom(workers[0], "big")
	eventually(t, "the copy's status on the manager's Job", 60*time.Second, func(ctx context.Context) error {
		if active := get(ctx, "job", "big", "-n", e.ns, "-o", "jsonpath={.status.active}"); active != "2" {
			return fmt.Errorf("status.active %q", active)
		}
		return nil
	})
	if pods := get(t.Context(), "pods", "-n", e.ns, "-o", "name"); pods != "" {
		t.Fatalf("pods run in the manager: %s", pods)
	}

	e.dispatchGroup(workers)
	e.copyEscapes(workers, "big", workers[1])

	// Finished there, finished here.
	e.job("short", "main", "", 1, 1, "2s")
	to := e.dispatchedTo("short", workers...)
	e.waitCondition("short", "Finished", "True", "Succeeded")
	if c := get(t.Context(), "job", "short", "-n", e.ns, "-o", `jsonpath={.status.conditions[?(@.type=="Complete")].status}`); c != "True" {
		t.Fatalf("the manager's Job is not Complete: %q", c)
	}
	e.goneFrom(to, "short")

	// A worker killed mid-run: the job runs in the other, never in both.
	e.job("lost", "main", "", 1, 2, "")
	first := e.dispatchedTo("lost", workers...)
	other := workers[0]
	if first == other {
		other = workers[1]
	}
	e.runsIn(first, "lost", 1)
	samples := e.sampleBoth(t, workers, "lost")
	first.script(t, "stop")
	stopped := time.Now()
	e.dispatchedTo("lost", other)
	e.runsIn(other, "lost", 1)
	moved := time.Since(stopped)
	samples.mark("restart")
	first.script(t, "start")
	e.goneFrom(first, "lost")
	e.runsIn(other, "lost", 1)
	samples.stop()
	samples.check(t, moved)
}

// dispatchGroup sends a group of two 4-GPU pods, too large for worker-1's
// quota, to worker-2: its copies run there, while the manager's pods stay
// at Berth's gate, bound to no node, with their copies' status. A pod
// deleted here is deleted there.
func (e *env) dispatchGroup(workers []localWorker) {
	e.t.Helper()
	for _, name := range []string{"gang-0", "gang-1"} {
		apply(e.t, groupPodOf(e.ns, name, "gang", 2, "4"))
	}
	eventually(e.t, "the group dispatched to "+workers[1].name(), 150*time.Second, func(ctx context.Context) error {
		cluster := get(ctx, "wl", "-n", e.ns, "-l", "berth.dev/pod-group-name=gang", "-o", "jsonpath={.items[*].status.clusterName}")
		if cluster != workers[1].name() {
			return fmt.Errorf("clusterName %q, checks %s", cluster, get(ctx, "wl", "-n", e.ns, "-l", "berth.dev/pod-group-name=gang", "-o", "jsonpath={.items[*].status.admissionChecks}"))
		}
		return nil
	})
	eventually(e.t, "the group's copies running in "+workers[1].name(), 90*time.Second, func(ctx context.Context) error {
		out := workers[1].get(ctx, "pods", "-n", e.ns, "-l", "berth.dev/pod-group-name=gang", "--field-selector=status.phase=Running", "-o", "name")
		if n := len(strings.Fields(out)); n != 2 {
			return fmt.Errorf("%d running", n)
		}
		return nil
	})
	eventually(e.t, "the manager's pods held, with their copies' status", 60*time.Second, func(ctx context.Context) error {
		out := get(ctx, "pods", "-n", e.ns, "-l", "berth.dev/pod-group-name=gang", "-o",
			`jsonpath={range .items[*]}{.metadata.name}:{.status.phase}:{.spec.nodeName}:{.spec.schedulingGates[*].name};{end}`)
		if out != "gang-0:Running::berth.dev/admission;gang-1:Running::berth.dev/admission;" {
			return fmt.Errorf("pods (name:phase:node:gates) %q", out)
		}
		return nil
	})
	for _, name := range []string{"gang-0", "gang-1"} {
		if _, err := kubectl(e.t.Context(), "", "delete", "pod", name, "-n", e.ns, "--wait=false"); err != nil {
			e.t.Fatal(err)
		}
		eventually(e.t, "the copy of "+name+" deleted in "+workers[1].name(), 60*time.Second, func(ctx context.Context) error {
			out, err := workers[1].kubectl(ctx, "", "get", "pod", name, "-n", e.ns, "--ignore-not-found", "-o", "name")
			if err != nil || strings.TrimSpace(out) != "" {
				return fmt.Errorf("copy %q (%v)", strings.TrimSpace(out), err)
			}
			return nil
		})
	}
}

// copyEscapes tries, as the owner of jobs dispatched to workers, to run
// what was not admitted: a job that waits for room (2 pods of 8 GPUs,
// more than either worker has free) cannot be started through its copy in
// a worker, whose Berth refuses it, naming spec.suspend; orphaned in the
// manager, it takes its copies with it; and so does the job running in
// worker w. A sampler of the waiting job's pods in the workers checks that
// none ever runs.
func (e *env) copyEscapes(workers []localWorker, running string, w localWorker) {
	e.t.Helper()
	e.job("huge", "main", "", 2, 8, "")
	ctx, cancel := context.WithCancel(e.t.Context())
	ran := make(chan int)
	go func() {
		n := 0
		for ctx.Err() == nil {
			for _, w := range workers {
				n = max(n, e.runningIn(ctx, w, "huge"))
			}
			time.Sleep(300 * time.Millisecond)
		}
		ran <- n
	}()
	for _, w := range workers {
		eventually(e.t, "the waiting job's copy in "+w.name(), 90*time.Second, func(ctx context.Context) error {
			if s := w.get(ctx, "job", "huge", "-n", e.ns, "-o", "jsonpath={.spec.suspend}"); s != "true" {
				return fmt.Errorf("the copy's spec.suspend %q", s)
			}
			return nil
		})
		_, err := w.kubectl(e.t.Context(), "", "patch", "job", "huge", "-n", e.ns, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		if err == nil || !strings.Contains(err.Error(), "spec.suspend") {
			e.t.Fatalf("starting the waiting copy in %s: %v; want a refusal naming spec.suspend", w.name(), err)
		}
	}
	for _, job := range []string{"huge", running} {
		if _, err := kubectl(e.t.Context(), "", "delete", "job", job, "-n", e.ns, "--cascade=orphan"); err != nil {
			e.t.Fatal(err)
		}
		for _, w := range workers {
			e.goneFrom(w, job)
		}
	}
	eventually(e.t, "no pod of the orphaned "+running+" running in "+w.name(), 60*time.Second, func(ctx context.Context) error {
		if n := e.runningIn(ctx, w, running); n != 0 {
			return fmt.Errorf("%d running", n)
		}
		return nil
	})
	cancel()
	if n := <-ran; n > 0 {
		e.t.Fatalf("%d pods of the waiting job ran in a worker", n)
	}
}

// bothSampler counts a job's running pods in each worker twice a second.
type bothSampler struct {
	mu      sync.Mutex
	rows    []sampleRow
	marked  int
	cancel  context.CancelFunc
	done    chan struct{}
	workers []localWorker
}

type sampleRow struct {
	at      time.Time
	running []int
}

func (e *env) sampleBoth(t *testing.T, workers []localWorker, job string) *bothSampler {
	ctx, cancel := context.WithCancel(t.Context())
	s := &bothSampler{cancel: cancel, done: make(chan struct{}), workers: workers, marked: -1}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			row := sampleRow{at: time.Now()}
			for _, w := range workers {
				row.running = append(row.running, e.runningIn(ctx, w, job))
			}
			s.mu.Lock()
			s.rows = append(s.rows, row)
			s.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return s
}

// mark notes where the lost worker was started again.
func (s *bothSampler) mark(string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marked = len(s.rows)
}

func (s *bothSampler) stop() {
	s.cancel()
	<-s.done
}

// check fails when a sample, before the lost worker came back, saw the job
// run in both workers; after it came back, its stale copy may run until
// the manager sees it again, and the test logs for how long.
func (s *bothSampler) check(t *testing.T, moved time.Duration) {
	var overlap []time.Time
	for i, r := range s.rows {
		both := true
		for _, n := range r.running {
			both = both && n > 0
		}
		if !both {
			continue
		}
		if i < s.marked {
			t.Fatalf("sample %d of %d (%s): the job runs in both workers at once: %v", i, len(s.rows), r.at.Format(time.RFC3339Nano), r.running)
		}
		overlap = append(overlap, r.at)
	}
	t.Logf("%d samples; the job ran elsewhere %s after its worker was killed; after the worker came back, its stale copy showed running in %d samples",
		len(s.rows), moved.Truncate(time.Second), len(overlap))
	if len(overlap) > 0 {
		t.Logf("the worker was started again at %s; the stale copy ran from %s to %s", s.rows[min(s.marked, len(s.rows)-1)].at.Format(time.StampMilli),
			overlap[0].Format(time.StampMilli), overlap[len(overlap)-1].Format(time.StampMilli))
		if span := overlap[len(overlap)-1].Sub(overlap[0]); span > 15*time.Second {
			t.Fatalf("the stale copy ran beside the new one for %s after its worker came back", span)
		}
	}
}
