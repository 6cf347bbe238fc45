package controllermanager

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The controller runs on defaultProcs threads, unless GOMAXPROCS is set,
// when Go's own reading of it stands, or it runs stock.
func TestSetProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cases := map[string]struct {
		deviations Deviations
		env        map[string]string
		want       int
	}{
		"default":       {want: defaultProcs},
		"GOMAXPROCS=3":  {env: map[string]string{"GOMAXPROCS": "3"}, want: 3},
		"stock":         {deviations: Deviations{Stock: true}, want: 3},
		"stock and env": {deviations: Deviations{Stock: true}, env: map[string]string{"GOMAXPROCS": "3"}, want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			runtime.GOMAXPROCS(3)
			if got := tc.deviations.SetProcs(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("%d threads, want %d", got, tc.want)
			}
		})
	}
}

// The soft memory limit is 45% of the container's (BERTH_MEMORY_LIMIT), unless
// GOMEMLIMIT is set, when Go's own reading of it stands, or it runs stock.
func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const before = 3 << 30
	cases := map[string]struct {
		deviations Deviations
		env        map[string]string
		want       int64
		wantErr    string
	}{
		"no container limit":                     {want: before},
		"1Gi":                                    {env: map[string]string{MemoryLimitEnv: "1Gi"}, want: (1 << 30) / 100 * 45},
		"bytes, as the downward API writes them": {env: map[string]string{MemoryLimitEnv: "1073741824"}, want: (1 << 30) / 100 * 45},
		"GOMEMLIMIT set":                         {env: map[string]string{MemoryLimitEnv: "1Gi", "GOMEMLIMIT": "900MiB"}, want: before},
		"stock":                                  {deviations: Deviations{Stock: true}, env: map[string]string{MemoryLimitEnv: "1Gi"}, want: before},
		"unreadable":                             {env: map[string]string{MemoryLimitEnv: "a lot"}, wantErr: MemoryLimitEnv},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			debug.SetMemoryLimit(before)
			got, err := tc.deviations.SetMemoryLimit(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("soft limit %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
