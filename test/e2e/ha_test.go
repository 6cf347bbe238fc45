package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// replica is one of two controller processes of the high-availability
// tests (hack/local-berth.sh with BERTH_REPLICA).
type replica int

func (r replica) dir() string {
	return filepath.Join(root, "_output", "local", fmt.Sprintf("berth-%d", r))
}

func (r replica) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "local-berth.sh"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("BERTH_REPLICA=%d", r))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting replica %d: %v\n%s", r, err, out)
	}
}

func (r replica) pid(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir(), "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func (r replica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(r.pid(t), sig); err != nil {
		t.Fatalf("signal %v to replica %d: %v", sig, r, err)
	}
}

func (r replica) log(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir(), "berth.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// leads reports how many times the replica's log says it became leader.
func (r replica) leads(t *testing.T) int {
	return strings.Count(r.log(t), "Successfully acquired lease")
}

// withReplicas replaces the local controller with two replicas behind a
// stand-in of a Service on the webhook's address, until the test ends.
func withReplicas(t *testing.T) (replica, replica) {
	t.Helper()
	if err := syscall.Kill(controllerPID(t), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for pid := controllerPID(t); syscall.Kill(pid, 0) == nil; {
		time.Sleep(20 * time.Millisecond)
	}
	// Last of the cleanups: the single controller comes back on 9443.
	t.Cleanup(func() { startController(t) })
	startServiceProxy(t, "127.0.0.1:9443", "127.0.0.1:9451", "127.0.0.1:9452")
	a, b := replica(1), replica(2)
	for _, r := range []replica{a, b} {
		_ = os.RemoveAll(r.dir())
		r.start(t)
	}
	t.Cleanup(func() {
		for _, r := range []replica{a, b} {
			if data, err := os.ReadFile(filepath.Join(r.dir(), "pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGCONT)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	return a, b
}

// controllerPID is the pid of the local cluster's single controller.
func controllerPID(t testing.TB) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "_output", "local", "berth", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// leader waits until one of the replicas leads and returns it.
func leader(t *testing.T, a, b replica, since map[replica]int) replica {
	t.Helper()
	var l replica
	eventually(t, "a replica leading", time.Minute, func(context.Context) error {
		for _, r := range []replica{a, b} {
			if r.leads(t) > since[r] {
				l = r
				return nil
			}
		}
		return fmt.Errorf("no replica has acquired the lease")
	})
	return l
}

// haJobs is how many jobs flow through the failover: 1,000 with
// BERTH_E2E_HA_JOBS=1000, fewer by default to keep make test short.
func haJobs() int {
	if n, err := strconv.Atoi(os.Getenv("BERTH_E2E_HA_JOBS")); err == nil && n > 0 {
		return n
	}
	return 300
}

// TestTwoReplicasFailOver kills the leader of two replicas while jobs are
// being created: the other serves the webhooks meanwhile, so creations go
// on, and takes over admission within the lease. Then it pauses the new
// leader (SIGSTOP) for longer than the lease and resumes it: the fence
// refuses its writes past the lease, and none it sent is answered after.
func TestTwoReplicasFailOver(t *testing.T) {
	e := newEnv(t)
	a, b := withReplicas(t)
	flavor := e.name("cpu")
	e.clusterScoped("resourceflavor", flavor, fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: %s}\nspec: {nodeLabels: {node.berth.dev/pool: cpu}}\n", flavor))
	cq := e.name("ha")
	e.clusterScoped("clusterqueue", cq, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: ClusterQueue
metadata: {name: %s}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: %s, resources: [{name: cpu, nominalQuota: "64"}]}]
`, cq, flavor))
	e.localQueue("main", cq)
	first := leader(t, a, b, map[replica]int{})
	w := e.watchWrites(t)

	n := haJobs()
	const batch = 20
	failed, created := 0, 0
	var killedAt time.Time
	for i := 0; i < n; i += batch {
		if killedAt.IsZero() && i >= n/3 {
			first.signal(t, syscall.SIGKILL)
			killedAt = time.Now()
		}
		var docs []string
		for j := i; j < min(i+batch, n); j++ {
			docs = append(docs, cpuJob(e.ns, fmt.Sprintf("ha-%04d", j)))
		}
		out, _ := kubectl(t.Context(), strings.Join(docs, "---\n"), "apply", "-f", "-")
		ok := strings.Count(out, " created")
		created += ok
		failed += min(batch, n-i) - ok
	}
	t.Logf("job creations: %d of %d succeeded while the leader was killed (%.2f%%)", created, n, 100*float64(created)/float64(n))
	if float64(failed) > 0.001*float64(n) {
		t.Errorf("%d of %d job creations failed; want at most 0.1%%", failed, n)
	}

	// Admission resumes under the other replica.
	admittedAtKill := w.count(writeAdmit)
	second := first%2 + 1
	eventually(t, "admission resumed by the other replica", time.Minute, func(context.Context) error {
		if w.count(writeAdmit) <= admittedAtKill || second.leads(t) == 0 {
			return fmt.Errorf("%d admissions, the other replica leads %d times", w.count(writeAdmit), second.leads(t))
		}
		return nil
	})
	failover := time.Since(killedAt)
	t.Logf("admission resumed %v after the leader was killed", failover.Round(100*time.Millisecond))
	if failover > 20*time.Second {
		t.Errorf("admission resumed %v after the kill, want under 20s", failover)
	}

	// The killed replica comes back as a follower; the leader is paused
	// past its lease, and resumed.
	first.start(t)
	since := map[replica]int{first: first.leads(t), second: second.leads(t)}
	second.signal(t, syscall.SIGSTOP)
	took := leader(t, a, b, since)
	if took != first {
		t.Fatalf("replica %d took over from the paused replica %d", took, second)
	}
	time.Sleep(30 * time.Second)
	second.signal(t, syscall.SIGCONT)
	var refused, late int
	eventually(t, "the resumed replica to give up", time.Minute, func(context.Context) error {
		m := regexp.MustCompile(`"The leader's writes past its lease","refused":(\d+),"writtenLate":(\d+)`).FindStringSubmatch(second.log(t))
		if m == nil {
			return fmt.Errorf("replica %d has not stopped", second)
		}
		refused, _ = strconv.Atoi(m[1])
		late, _ = strconv.Atoi(m[2])
		return nil
	})
	t.Logf("the paused leader, resumed, had %d writes refused and %d written after its lease could have passed on", refused, late)
	if late > 0 {
		t.Errorf("%d writes of the paused leader were written after its lease could have passed on", late)
	}
	eventually(t, "every job admitted and finished", 5*time.Minute, func(ctx context.Context) error {
		done := strings.Count(get(ctx, "jobs", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Complete")].status} {end}`), "True")
		if done < created {
			return fmt.Errorf("%d of %d complete", done, created)
		}
		return nil
	})
}

// cpuJob is a one-pod Job of one cpu that runs a second.
func cpuJob(ns, name string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  template:
    metadata: {annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "1s"}}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.example/e2e:latest
        resources: {requests: {cpu: "1"}}
`, name, ns)
}
