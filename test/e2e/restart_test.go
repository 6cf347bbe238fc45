package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestControllerRestartLosesNothing kills the Berth controller while jobs
// run and wait, deletes a running job while it is down, and starts it
// again: the waiting job is admitted on the freed quota, and never more
// than the quota is admitted.
func TestControllerRestartLosesNothing(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("restart", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	for _, name := range []string{"a", "b", "c"} {
		e.job(name, "main", "", 1, 4, "")
	}
	eventually(t, "two jobs admitted", 60*time.Second, func(ctx context.Context) error { return e.admittedCount(ctx, 2) })

	killController(t)
	var running string
	for _, name := range []string{"a", "b", "c"} {
		if !e.suspended(t.Context(), name) {
			running = name
			break
		}
	}
	if _, err := kubectl(t.Context(), "", "delete", "job", running, "-n", e.ns, "--wait=true"); err != nil {
		t.Fatal(err)
	}
	startController(t)

	eventually(t, "the waiting job admitted on the freed quota", 90*time.Second, func(ctx context.Context) error { return e.admittedCount(ctx, 2) })
	for range 8 {
		if err := e.admittedCount(t.Context(), 2); err != nil {
			t.Fatalf("after the restart: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// admittedCount fails when the namespace does not have exactly n admitted
// workloads, or runs a job whose workload is not admitted.
func (e *env) admittedCount(ctx context.Context, n int) error {
	out := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.metadata.ownerReferences[0].name}={.status.conditions[?(@.type=="Admitted")].status} {end}`)
	admitted := map[string]bool{}
	for _, f := range strings.Fields(out) {
		name, status, _ := strings.Cut(f, "=")
		admitted[name] = status == "True"
	}
	count := 0
	for name, ok := range admitted {
		if ok {
			count++
		}
		if running := get(ctx, "job", name, "-n", e.ns, "-o", "jsonpath={.spec.suspend}") == "false"; running && !ok {
			return fmt.Errorf("job %s runs without admission", name)
		}
	}
	if count > n {
		e.t.Fatalf("%d workloads admitted on quota for %d: %s", count, n, out)
	}
	if count != n {
		return fmt.Errorf("%d admitted: %s", count, out)
	}
	return nil
}

func killController(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "_output", "local", "berth", "pid"))
	if err != nil {
		t.Fatalf("the controller's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	// SIGKILL: a crash, not a graceful stop.
	if err := p.Kill(); err != nil {
		t.Fatalf("killing the controller: %v", err)
	}
	_, _ = p.Wait()
}

func startController(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "local-berth.sh"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting the controller: %v\n%s", err, out)
	}
}

// restartControllerWith restarts the controller with config/local/berth.yaml
// and extra appended, and with its own configuration again when the test
// ends.
func restartControllerWith(t *testing.T, extra string) {
	t.Helper()
	base, err := os.ReadFile(filepath.Join(root, "config", "local", "berth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "berth.yaml")
	if err := os.WriteFile(path, append(base, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "local-berth.sh"))
	cmd.Env = append(os.Environ(), "BERTH_CONFIG="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting the controller with %q: %v\n%s", extra, err, out)
	}
	t.Cleanup(func() { startController(t) })
}
