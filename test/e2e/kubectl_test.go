package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var (
	root       = repoRoot()
	kubeconfig = filepath.Join(root, "_output", "local", "kubeconfig")
	seq        atomic.Int32
)

// repoRoot is two directories above the test's package, where go test
// runs it (the source file's path, which -trimpath hides, is not used).
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(dir, "..", "..")
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: no local cluster; run make local-up (make test-e2e does)")
		os.Exit(1)
	}
	// kubectl finds the plugin kubectl berth on PATH, as a user's would.
	if _, err := os.Stat(filepath.Join(root, "bin", "kubectl-berth")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: no bin/kubectl-berth; run make build (make test-e2e does)")
		os.Exit(1)
	}
	_ = os.Setenv("PATH", filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	logFile := filepath.Join(root, "_output", "local", "berth", "berth.log")
	from := int64(0)
	if fi, err := os.Stat(logFile); err == nil {
		from = fi.Size()
	}
	code := m.Run()
	if err := noPanicLogged(logFile, from); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	os.Exit(code)
}

// noPanicLogged fails when the local controller's log, from offset from
// on (what this run added), records a panic that controller-runtime
// recovered from: a reconciler's bug that the tests' outcomes may not
// show, since the work is retried.
func noPanicLogged(logFile string, from int64) error {
	f, err := os.Open(logFile)
	if err != nil {
		return nil // no local controller ran: the installed one's logs are its pod's
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	var panics []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "Observed a panic") {
			panics = append(panics, line[:min(len(line), 1500)])
		}
	}
	if len(panics) > 0 {
		return fmt.Errorf("the controller recovered from %d panics during the run (%s); the first:\n%s", len(panics), logFile, panics[0])
	}
	return sc.Err()
}

// kubectl runs the real kubectl against the local cluster.
func kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	return kubectlAt(ctx, kubeconfig, stdin, args...)
}

// kubectlAt runs the real kubectl against the cluster of a kubeconfig.
func kubectlAt(ctx context.Context, kubeconfig, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "k8s", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// apply applies YAML and fails the test on error.
func apply(t testing.TB, yaml string) {
	t.Helper()
	if _, err := kubectl(t.Context(), yaml, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// get reads a jsonpath of an object, "" when it does not exist.
func get(ctx context.Context, args ...string) string {
	out, err := kubectl(ctx, "", append([]string{"get"}, args...)...)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// eventually polls check until it returns nil or the timeout passes.
func eventually(t testing.TB, what string, timeout time.Duration, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// env is a test's own namespace and names.
type env struct {
	t  testing.TB
	ns string
	id int32
}

// newEnv creates a namespace that is deleted with everything in it when
// the test ends.
func newEnv(t testing.TB) *env {
	id := seq.Add(1)
	e := &env{t: t, ns: fmt.Sprintf("e2e-%d-%d", os.Getpid()%10000, id), id: id}
	apply(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+e.ns+"\n")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// The namespace controller empties a deleted namespace only 5s
		// later. Of what is in it, the next tests would feel only the pods
		// (they hold the nodes): those go at once, and a terminating
		// namespace takes no new ones.
		_, _ = kubectl(ctx, "", "delete", "namespace", e.ns, "--wait=false")
		_, _ = kubectl(ctx, "", "delete", "pods", "--all", "-n", e.ns, "--grace-period=0", "--force", "--wait=true")
	})
	return e
}

// name makes a cluster-scoped name unique to the test.
func (e *env) name(base string) string { return fmt.Sprintf("%s-%s", base, e.ns) }

// clusterScoped applies a cluster-scoped object and deletes it at the end.
func (e *env) clusterScoped(kind, name, yaml string) {
	apply(e.t, yaml)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = kubectl(ctx, "", "delete", kind, name, "--wait=false")
	})
}
