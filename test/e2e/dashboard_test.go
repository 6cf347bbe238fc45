package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dashboard starts kubectl berth dashboard on a free port and returns its
// URL; the test's end stops it.
func dashboard(t *testing.T) string {
	t.Helper()
	return serving(t, "Berth dashboard: ", "berth", "dashboard", "--port", "0")
}

// proxy starts kubectl proxy on a free port with args (--as USER) and
// returns its URL; the test's end stops it.
func proxy(t *testing.T, args ...string) string {
	t.Helper()
	return "http://" + serving(t, "Starting to serve on ", append([]string{"proxy", "--port", "0"}, args...)...)
}

// serving runs kubectl with args until the test ends, and returns the
// first word after marker in its output: where it serves.
func serving(t *testing.T, marker string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "k8s", "kubectl"), append(args, "--kubeconfig", kubeconfig)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if _, url, ok := strings.Cut(lines.Text(), marker); ok {
				urls <- strings.Fields(url)[0]
			}
		}
	}()
	select {
	case url := <-urls:
		return url
	case <-time.After(time.Minute):
		t.Fatalf("kubectl %s printed no address in a minute", strings.Join(args, " "))
		return ""
	}
}

// browser is headless Chromium from Debian's package; hack/e2e.sh installs
// it when missing and names it in BERTH_CHROMIUM.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("BERTH_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			t.Fatal("no chromium: install Debian's package chromium (hack/chromium.sh does)")
		}
	}
	// Not t.TempDir: chromium's helper processes may still write to its
	// profile for a moment after the browser has exited.
	profile, err := os.MkdirTemp("", "berth-e2e-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(profile))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		for range 20 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The first run starts the browser.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// TestDashboardFollowsTheCluster: in a real browser, the dashboard shows a
// job that waits with its position and the message in numbers; when the
// job ahead of it is deleted, the same page, not reloaded, shows it
// admitted.
func TestDashboardFollowsTheCluster(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("dashboard", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.submit(jobSpec{name: "holder", queue: "main", completions: 1, parallelism: 1, gpus: 8})
	e.running("holder", 1)
	e.submit(jobSpec{name: "waiter", queue: "main", completions: 1, parallelism: 1, gpus: 6})
	msg := e.waitPending("waiter", "6 nvidia.com/gpu")
	waiter := e.ns + "/" + e.workload(t.Context(), "waiter")

	url := dashboard(t)
	ctx := browser(t)
	run := func(what string, timeout time.Duration, actions ...chromedp.Action) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	row := fmt.Sprintf(`tr.pending-workload[data-workload=%q]`, waiter)
	var position, message string
	run("the overview lists the queue", 30*time.Second,
		chromedp.Navigate(url),
		chromedp.WaitVisible(fmt.Sprintf(`tr.queue[data-queue=%q]`, cq)),
		chromedp.Click(fmt.Sprintf(`a[href="queue?name=%s"]`, cq)),
		chromedp.WaitVisible(row),
		chromedp.Text(row+" td.position", &position),
		chromedp.Text(row+" td.message", &message),
		// A mark the page keeps until it is loaded anew.
		chromedp.Evaluate(`window.notReloaded = true`, nil),
	)
	if position != "1" || message != msg {
		t.Fatalf("the page shows position %q, message %q; want 1 and the workload's %q", position, message, msg)
	}
	if _, err := kubectl(t.Context(), "", "delete", "job", "holder", "-n", e.ns, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	var notReloaded bool
	admitted := fmt.Sprintf(`tr.admitted-workload[data-workload=%q]`, waiter)
	run("the page shows the job admitted", 90*time.Second,
		chromedp.WaitVisible(admitted),
		chromedp.WaitVisible(`table.feed tr.admitted`),
		chromedp.Evaluate(`window.notReloaded === true`, &notReloaded),
	)
	if !notReloaded {
		t.Fatal("the page was reloaded")
	}
	// The chart of GPUs in use, drawn by the plugin from the Workloads'
	// history, ends above zero: the holder ran, now the waiter does.
	var points string
	var ok bool
	run("the page charts the GPUs in use", 30*time.Second,
		chromedp.WaitVisible(`svg.chart polyline.used`),
		chromedp.AttributeValue(`svg.chart polyline.used`, "points", &points, &ok),
	)
	fields := strings.Fields(points)
	// y 130 is the chart's zero line.
	if !ok || len(fields) < 2 || strings.HasSuffix(fields[len(fields)-1], ",130.0") {
		t.Errorf("the GPUs in use end at zero: %q", points)
	}
	var shot []byte
	run("screenshot", 30*time.Second, chromedp.FullScreenshot(&shot, 100))
	if err := os.MkdirAll(filepath.Join(root, "_output"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "_output", "dashboard.png"), shot, 0o600); err != nil {
		t.Fatal(err)
	}
}
