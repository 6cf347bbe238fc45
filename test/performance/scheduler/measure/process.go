package measure

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/procfs"
)

// Process is what one process cost.
type Process struct {
	CPUSeconds  float64 `json:"cpuSeconds"`
	MaxRSSBytes int64   `json:"maxRssBytes"`
}

// ReadProcess reads the CPU time (user and system) and the peak resident
// memory (VmHWM) of a live process from /proc.
func ReadProcess(pid int) (Process, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return Process{}, err
	}
	stat, err := p.Stat()
	if err != nil {
		return Process{}, fmt.Errorf("reading /proc/%d/stat: %w", pid, err)
	}
	status, err := p.NewStatus()
	if err != nil {
		return Process{}, fmt.Errorf("reading /proc/%d/status: %w", pid, err)
	}
	return Process{CPUSeconds: stat.CPUTime(), MaxRSSBytes: int64(status.VmHWM)}, nil
}

// ReadProcesses reads the cost of the processes of a run, by name: the
// controller ("berth", controllerPid), the API server and etcd that envtest
// started as children of this process, and this process itself
// ("runner"), which plays the users and the jobs: it creates the
// workloads, watches them and finishes them. A process it cannot read is
// left out.
func ReadProcesses(controllerPid int) map[string]Process {
	pids := childrenByName(os.Getpid(), "kube-apiserver", "etcd")
	pids["berth"] = controllerPid
	pids["runner"] = os.Getpid()
	out := map[string]Process{}
	for name, pid := range pids {
		if p, err := ReadProcess(pid); err == nil {
			out[name] = p
		}
	}
	return out
}

// childrenByName finds the live child processes of parent whose
// executable's base name is one of names.
func childrenByName(parent int, names ...string) map[string]int {
	found := map[string]int{}
	// A process that ends while the list is read is skipped, as are
	// those whose executable this user may not read.
	procs, _ := procfs.AllProcs()
	for _, p := range procs {
		stat, err := p.Stat()
		if err != nil || stat.PPID != parent {
			continue
		}
		exe, err := p.Executable()
		if err != nil {
			continue
		}
		for _, n := range names {
			if filepath.Base(exe) == n {
				found[n] = p.PID
			}
		}
	}
	return found
}
