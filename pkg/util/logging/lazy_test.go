package logging

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestLazyKeepsValuesNamesAndLevels: lines written through Lazy carry the
// values and names given before, in order, and disabled levels write
// nothing; siblings do not share values.
func TestLazyKeepsValuesNamesAndLevels(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{Verbosity: 1})
	log := Lazy(base).WithName("scheduler").WithValues("a", 1)
	first := log.WithValues("b", 2)
	second := log.WithValues("c", 3)
	first.Info("one", "d", 4)
	second.V(1).Info("two")
	second.V(2).Info("hidden")
	first.Error(nil, "three")
	want := []string{
		`scheduler "level"=0 "msg"="one" "a"=1 "b"=2 "d"=4`,
		`scheduler "level"=1 "msg"="two" "a"=1 "c"=3`,
		`scheduler "msg"="three" "error"=null "a"=1 "b"=2`,
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// BenchmarkWithValues: what controller-runtime adds to the logger of
// each reconcile, on zap as is and through Lazy.
func BenchmarkWithValues(b *testing.B) {
	for name, log := range map[string]logr.Logger{"zap": zap.New(), "lazy": Lazy(zap.New())} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_ = log.WithValues("Workload", "ns/name", "namespace", "ns", "name", "name", "reconcileID", "0123")
			}
		})
	}
}
