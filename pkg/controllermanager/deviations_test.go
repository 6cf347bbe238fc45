package controllermanager

import (
	"runtime"
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
