package main

import (
	"runtime"
	"testing"
)

// TestSetProcs: the controller runs on defaultProcs threads, unless
// GOMAXPROCS is set, when Go's own reading of it stands.
func TestSetProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(3)
	if got := setProcs(func(string) string { return "" }); got != defaultProcs {
		t.Errorf("without GOMAXPROCS: %d threads, want %d", got, defaultProcs)
	}
	runtime.GOMAXPROCS(3)
	env := map[string]string{"GOMAXPROCS": "3"}
	if got := setProcs(func(k string) string { return env[k] }); got != 3 {
		t.Errorf("with GOMAXPROCS=3: %d threads, want 3", got)
	}
}
