package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The writes the controller makes in a job's life, as seen from outside
// through watches of Workloads and Jobs.
const (
	writeCreate    = "workload create"
	writeAdmit     = "admission"
	writeUnsuspend = "unsuspend"
	writeEvict     = "eviction"
	writeSuspend   = "suspend"
	writeRequeue   = "requeue"
	writeFinish    = "finish"
)

// writeWatcher tells, from kubectl watches of a namespace's Workloads and
// Jobs, each write of the kinds above as it is seen.
type writeWatcher struct {
	mu    sync.Mutex
	seen  map[string]int
	state map[string]map[string]bool
	cmds  []*exec.Cmd
}

func (e *env) watchWrites(t *testing.T) *writeWatcher {
	w := &writeWatcher{seen: map[string]int{}, state: map[string]map[string]bool{}}
	for _, kind := range []string{"workloads", "jobs"} {
		cmd := exec.Command(filepath.Join(root, "bin", "k8s", "kubectl"), "--kubeconfig", kubeconfig,
			"get", kind, "-n", e.ns, "--watch", "--output-watch-events", "-o", "json")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.cmds = append(w.cmds, cmd)
		go func() {
			dec := json.NewDecoder(out)
			for {
				var ev struct {
					Type   string          `json:"type"`
					Object json.RawMessage `json:"object"`
				}
				if dec.Decode(&ev) != nil {
					return
				}
				w.observe(kind, ev.Type, ev.Object)
			}
		}()
	}
	t.Cleanup(func() {
		for _, c := range w.cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	return w
}

// observe records the writes an event shows: the facts of the object that
// turned true since its last event.
func (w *writeWatcher) observe(kind, typ string, raw json.RawMessage) {
	var obj struct {
		Metadata struct{ Name string } `json:"metadata"`
		Spec     struct {
			Suspend *bool `json:"suspend"`
		} `json:"spec"`
		Status struct {
			Admission  json.RawMessage `json:"admission"`
			Conditions []struct{ Type, Status string }
		} `json:"status"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return
	}
	facts := map[string]bool{}
	cond := func(t string) bool {
		for _, c := range obj.Status.Conditions {
			if c.Type == t {
				return c.Status == "True"
			}
		}
		return false
	}
	switch kind {
	case "workloads":
		facts[writeCreate] = true
		facts[writeAdmit] = cond("QuotaReserved")
		facts[writeEvict] = cond("Evicted")
		facts[writeRequeue] = cond("Requeued") && !cond("QuotaReserved")
		facts[writeFinish] = cond("Finished")
	case "jobs":
		suspended := obj.Spec.Suspend != nil && *obj.Spec.Suspend
		facts[writeUnsuspend] = !suspended
		facts[writeSuspend] = suspended
	}
	key := kind + "/" + obj.Metadata.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	before, known := w.state[key]
	for fact, now := range facts {
		// A Job is created suspended: its first suspended state is no
		// write of Berth's.
		if now && !before[fact] && (known || fact != writeSuspend) {
			w.seen[fact]++
		}
	}
	w.state[key] = facts
}

func (w *writeWatcher) count(kind string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[kind]
}

// TestCrashMatrix kills the controller with SIGKILL right after it made
// the second write of each kind of a job's life, with jobs flowing and
// preempting each other, and starts it again. Throughout, no sample of the
// pods that run holds more GPUs than the quota; after each restart every
// unfinished job gets a Workload, no job runs without admission, and every
// job ends.
func TestCrashMatrix(t *testing.T) {
	e := newEnv(t)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	cq := e.queue("crash", "  preemption: {withinClusterQueue: LowerPriority}\n", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.sampleGPUs(8)
	for _, kind := range []string{writeCreate, writeAdmit, writeUnsuspend, writeEvict, writeSuspend, writeRequeue, writeFinish} {
		t.Run(strings.ReplaceAll(kind, " ", "-"), func(t *testing.T) {
			w := e.watchWrites(t)
			prefix := strings.ReplaceAll(kind, " ", "-")
			var jobs []jobSpec
			for i := range 3 {
				// The low ones run longer than the preemption delay (5s):
				// the high ones hold, then preempt them.
				jobs = append(jobs, jobSpec{name: fmt.Sprintf("%s-low-%d", prefix, i), queue: "main", priorityClass: low, completions: 1, parallelism: 1, gpus: 4, runFor: "15s"})
			}
			for i := range 2 {
				// Each needs the whole quota: the first evicts both running
				// low ones at once when its delay is over (two of 4 GPUs
				// each would not: the second takes what the first frees
				// when it ends, and evicts nobody).
				jobs = append(jobs, jobSpec{name: fmt.Sprintf("%s-high-%d", prefix, i), queue: "main", priorityClass: high, completions: 2, parallelism: 2, gpus: 4, runFor: "3s"})
			}
			restarted := make(chan error, 1)
			go func() {
				for w.count(kind) < 2 {
					time.Sleep(20 * time.Millisecond)
				}
				restarted <- crashAndRestart()
			}()
			for i, j := range jobs {
				e.submitWithRetry(j)
				if i == 2 {
					// The high-priority jobs arrive while the low ones run.
					time.Sleep(2 * time.Second)
				}
			}
			select {
			case err := <-restarted:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("saw %d writes of kind %s, want 2 before the kill", w.count(kind), kind)
			}
			e.checkRunOnlyAdmitted(t, jobs, 3*time.Minute)
		})
	}
}

// crashAndRestart kills the controller with SIGKILL and starts it again:
// the local cluster's, or the installed one while TestInstalledController
// runs.
var crashAndRestart = crashLocalController

func crashLocalController() error {
	data, err := os.ReadFile(filepath.Join(root, "_output", "local", "berth", "pid"))
	if err != nil {
		return fmt.Errorf("the controller's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing the controller: %w", err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if out, err := exec.Command(filepath.Join(root, "hack", "local-berth.sh")).CombinedOutput(); err != nil {
		return fmt.Errorf("starting the controller: %w\n%s", err, out)
	}
	return nil
}

// submitWithRetry creates a job, again while the webhook is down: a
// controller that was just killed takes a few seconds to serve again.
func (e *env) submitWithRetry(j jobSpec) {
	e.t.Helper()
	eventually(e.t, "creating job "+j.name, time.Minute, func(ctx context.Context) error {
		_, err := kubectl(ctx, e.jobYAML(j), "apply", "-f", "-")
		return err
	})
}

// checkRunOnlyAdmitted watches the jobs until all of them complete: none
// may run while its Workload is not admitted, and each unfinished one must
// have a Workload within a minute of the restart. The jobs are read before
// their Workloads: a Workload stops being admitted only after its job
// stopped, so a job read running whose Workload is then read unadmitted
// did run without admission.
func (e *env) checkRunOnlyAdmitted(t *testing.T, jobs []jobSpec, timeout time.Duration) {
	t.Helper()
	restarted := time.Now()
	readJobs := func(ctx context.Context) map[string]string {
		return fields(get(ctx, "jobs", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}/{.spec.suspend}/{.status.conditions[?(@.type=="Complete")].status} {end}`))
	}
	eventually(t, "every job of the round complete", timeout, func(ctx context.Context) error {
		// The Workloads are read between two reads of the jobs: a job
		// whose version did not change between them ran all along.
		before := readJobs(ctx)
		wlState := fields(get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.metadata.ownerReferences[0].name}={.status.conditions[?(@.type=="Admitted")].status}/{.status.conditions[?(@.type=="Finished")].status} {end}`))
		after := readJobs(ctx)
		pending := 0
		for _, j := range jobs {
			version, state, _ := strings.Cut(after[j.name], "/")
			suspend, complete, _ := strings.Cut(state, "/")
			if complete == "True" {
				continue
			}
			pending++
			wl, ok := wlState[j.name]
			admitted, finished, _ := strings.Cut(wl, "/")
			unchanged := strings.HasPrefix(before[j.name], version+"/")
			if unchanged && suspend == "false" && admitted != "True" && finished != "True" {
				t.Errorf("job %s runs while its Workload is not admitted (%q)", j.name, wl)
			}
			if !ok && time.Since(restarted) > time.Minute {
				t.Errorf("job %s has no Workload a minute after the restart", j.name)
			}
		}
		if pending > 0 {
			return fmt.Errorf("%d jobs not complete", pending)
		}
		return nil
	})
}

// fields reads "name=value" pairs.
func fields(out string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(out) {
		name, v, _ := strings.Cut(f, "=")
		m[name] = v
	}
	return m
}
