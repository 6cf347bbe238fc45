package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
)

// controllerConfig is the controller's default configuration with what a
// process beside the API server needs: its listeners on free loopback
// ports, its certificates in its own directory, and no job framework,
// since the perf API server has no Job or JobSet kinds to run.
const controllerConfig = `apiVersion: config.berth.dev/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
  # Plain HTTP on loopback: the harness scrapes it without a token.
  secureServing: false
pprofBindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
# Served, so that its idle cost is in every run; nothing calls it here.
visibility:
  bindAddress: 127.0.0.1:%d
integrations:
  frameworks: []
`

// controllerProcess is a running Berth controller manager process.
type controllerProcess struct {
	binary, kubeconfig, config string
	// env is what the process's environment adds to the runner's.
	env []string
	cmd *exec.Cmd
	// exited is closed when the process has ended, with exitErr set.
	exited     chan struct{}
	exitErr    error
	metricsURL string
	readyzURL  string
	// pprofURL serves Go's profiles (/debug/pprof/...).
	pprofURL string
	// logPath is the file of its standard output and error.
	logPath string
}

// startController starts binary against kubeconfig, with its files in dir,
// extra appended to its configuration and memoryLimit as its container's
// limit (none if empty), and waits until it is ready.
func startController(ctx context.Context, binary, kubeconfig, dir, extra, memoryLimit string) (*controllerProcess, error) {
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "controller_config.yaml")
	cfg := fmt.Sprintf(controllerConfig, ports[0], ports[1], ports[3], ports[2], filepath.Join(dir, "certs"), ports[4])
	cfg += extra
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	c := &controllerProcess{
		binary:     binary,
		kubeconfig: kubeconfig,
		config:     cfgPath,
		env:        []string{"KUBECONFIG=" + kubeconfig},
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1]),
		readyzURL:  fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[0]),
		pprofURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[3]),
		logPath:    filepath.Join(dir, "controller.log"),
	}
	if memoryLimit != "" {
		c.env = append(c.env, "BERTH_MEMORY_LIMIT="+memoryLimit)
	}
	if err := os.WriteFile(c.logPath, nil, 0o644); err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// start starts the process, its output appended to the log, and waits
// until it is ready.
func (c *controllerProcess) start(ctx context.Context) error {
	log, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	args := []string{"--config", c.config}
	if level := os.Getenv("BERTH_LOG_LEVEL"); level != "" {
		// As for the local cluster (hack/local-berth.sh): more detail in
		// the controller's log, for looking into a run.
		args = append(args, "--zap-log-level="+level)
	}
	c.cmd = exec.Command(c.binary, args...)
	c.cmd.Env = append(os.Environ(), c.env...)
	c.cmd.Stdout, c.cmd.Stderr = log, log
	if err := c.cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting %s: %w", c.binary, err)
	}
	exited, cmd := make(chan struct{}), c.cmd
	c.exited = exited
	go func() {
		c.exitErr = cmd.Wait()
		_ = log.Close()
		close(exited)
	}()
	if err := c.waitReady(ctx); err != nil {
		return errors.Join(err, c.stop())
	}
	return nil
}

// restart kills the controller with SIGKILL, as a crash or the loss of
// its node would, and starts it again with the same configuration, its
// output appended to the same log. It returns once the new process is
// ready; it leads, and admits, once the lease the killed one held has
// expired.
func (c *controllerProcess) restart(ctx context.Context) error {
	_ = c.cmd.Process.Kill()
	<-c.exited
	return c.start(ctx)
}

func (c *controllerProcess) waitReady(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.exited:
			return false, fmt.Errorf("the controller exited: %v; see %s", c.exitErr, c.logPath)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.readyzURL, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the controller to be ready: %w", err)
	}
	return nil
}

// pid is the controller's process id.
func (c *controllerProcess) pid() int { return c.cmd.Process.Pid }

// exitedCost is the CPU time and peak memory of the process that exited,
// as the operating system counted them when it ended.
func (c *controllerProcess) exitedCost() measure.Process {
	ps := c.cmd.ProcessState
	if ps == nil {
		return measure.Process{}
	}
	p := measure.Process{CPUSeconds: (ps.UserTime() + ps.SystemTime()).Seconds()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		p.MaxRSSBytes = ru.Maxrss * 1024 // Linux counts it in KiB
	}
	return p
}

// controllerSnapshot is all the controller counted, at one moment, and
// what it cost until then.
type controllerSnapshot struct {
	measure.ControllerCounts
	process measure.Process
}

// snapshot reads the controller's counts from one scrape of its metrics,
// and its cost, as quickly as it can: before a kill, whatever the
// controller does after it is lost from its counts.
func (c *controllerProcess) snapshot(ctx context.Context) (controllerSnapshot, error) {
	counts, err := measure.ScrapeController(ctx, c.metricsURL)
	if err != nil {
		return controllerSnapshot{}, err
	}
	process, err := measure.ReadProcess(c.pid())
	if err != nil {
		return controllerSnapshot{}, err
	}
	return controllerSnapshot{ControllerCounts: counts, process: process}, nil
}

// stop ends the controller with SIGTERM, then SIGKILL after 10 s.
func (c *controllerProcess) stop() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return errors.New("the controller did not stop within 10s of SIGTERM")
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
