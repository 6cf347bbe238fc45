package scheduler

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Berth runs on.
const clockTicks = 100

// ReadProcess reads the CPU time and peak resident memory of a live
// process from /proc.
func ReadProcess(pid int) (Process, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Process{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Process{}, err
	}
	return parseProc(stat, status)
}

func parseProc(stat, status []byte) (Process, error) {
	// The command name, in parentheses, may hold spaces: fields count
	// from its closing parenthesis. utime and stime are fields 14 and 15.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return Process{}, fmt.Errorf("unexpected /proc stat: %q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 13 {
		return Process{}, fmt.Errorf("unexpected /proc stat: %q", stat)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Process{}, fmt.Errorf("unexpected /proc stat: %q", stat)
	}
	p := Process{CPUSeconds: float64(utime+stime) / clockTicks}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return Process{}, fmt.Errorf("unexpected VmHWM %q", rest)
			}
			p.MaxRSSBytes = kb * 1024
		}
	}
	return p, nil
}

// childrenByName finds the live child processes of parent whose
// executable's base name is one of names: the etcd and kube-apiserver
// that envtest started.
func childrenByName(parent int, names ...string) map[string]int {
	found := map[string]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		end := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		exe, err := os.Readlink(filepath.Join(dir, "exe"))
		if err != nil {
			continue
		}
		for _, n := range names {
			if filepath.Base(exe) == n {
				pid, _ := strconv.Atoi(filepath.Base(dir))
				found[n] = pid
			}
		}
	}
	return found
}
