package measure

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestReadProcess reads this test's own process. Its CPU time must match
// what the kernel reports through getrusage, to the clock tick /proc
// counts in, and its peak memory must hold a buffer it touched.
// (getrusage's peak memory is no check: it keeps the peak of the program
// this one's exec replaced.)
func TestReadProcess(t *testing.T) {
	first, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	busy(t, 200*time.Millisecond)
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	before := rusage(t)
	got, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	after := rusage(t)
	runtime.KeepAlive(buf)
	// /proc rounds down to whole ticks of 10 ms, on each of user and
	// system time.
	if low, high := cpu(before)-0.03, cpu(after)+0.01; got.CPUSeconds < low || got.CPUSeconds > high {
		t.Errorf("CPUSeconds = %v, want between %v and %v (getrusage)", got.CPUSeconds, low, high)
	}
	if d := got.CPUSeconds - first.CPUSeconds; d < 0.17 {
		t.Errorf("CPUSeconds grew by %v over 200 ms of work", d)
	}
	// The peak is at least what is resident now, the buffer included.
	// (How much it grew says nothing: a test run again in this process
	// may reuse the memory of the last run.)
	if got.MaxRSSBytes < int64(len(buf)) {
		t.Errorf("MaxRSSBytes = %d, less than the %d bytes of the buffer just touched", got.MaxRSSBytes, len(buf))
	}
}

func TestReadProcessOfNoProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	// Reaped: its pid names no process, until the kernel hands it out
	// again, which takes a while on a machine that starts few.
	if _, err := ReadProcess(cmd.Process.Pid); err == nil {
		t.Errorf("ReadProcess(%d) of an ended process: no error", cmd.Process.Pid)
	}
}

// TestChildrenByName finds a child of this process by its executable,
// and not a process that is not a child.
func TestChildrenByName(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	got := childrenByName(os.Getpid(), "sleep", "kube-apiserver")
	if len(got) != 1 || got["sleep"] != cmd.Process.Pid {
		t.Errorf("childrenByName() = %v, want sleep at %d alone", got, cmd.Process.Pid)
	}
	if got := childrenByName(cmd.Process.Pid, "sleep"); len(got) != 0 {
		t.Errorf("children of the sleep: %v, want none", got)
	}
}

// busy works until this process has used d more of CPU time: on a
// loaded machine that takes longer than d.
func busy(t *testing.T, d time.Duration) {
	x := 1
	for end := cpu(rusage(t)) + d.Seconds(); cpu(rusage(t)) < end; {
		for i := range 100_000 {
			x = x*31 + i
		}
	}
	_ = x
}

// cpu is the user and system time of ru, in seconds.
func cpu(ru syscall.Rusage) float64 {
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
}

func rusage(t *testing.T) syscall.Rusage {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru
}
