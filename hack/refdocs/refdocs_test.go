package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

const repoRoot = "../.."

var repo = sync.OnceValues(func() (*code, error) {
	return load(repoRoot, "./apis/...", "./pkg/...", "./cmd/...")
})

func loadRepo(t *testing.T) *code {
	t.Helper()
	c, err := repo()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The committed pages are what the code says now: a key, metric, event
// reason, condition or command added, renamed or removed in the code and
// not on its page fails here, with the lines that differ.
func TestPagesAreCurrent(t *testing.T) {
	t.Setenv("KUBECACHEDIR", "")
	c := loadRepo(t)
	for _, p := range pages {
		t.Run(p.slug, func(t *testing.T) {
			want, err := p.render(c)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("site", "content", p.slug+".md")
			got, err := os.ReadFile(filepath.Join(repoRoot, path))
			if err != nil {
				t.Fatalf("%v: run make apiref", err)
			}
			missing, stale := lineDiff(want, string(got))
			switch {
			case len(missing)+len(stale) > 0:
				t.Errorf("%s is not what the code says: run make apiref.\nNot on the page:\n%s\nOn the page, and no longer so in the code:\n%s",
					path, strings.Join(missing, "\n"), strings.Join(stale, "\n"))
			case want != string(got):
				t.Errorf("%s has the code's lines in another order: run make apiref", path)
			}
		})
	}
}

// lineDiff are the lines of want that got lacks, and those of got that
// want lacks.
func lineDiff(want, got string) (missing, stale []string) {
	count := map[string]int{}
	for _, l := range strings.Split(got, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(want, "\n") {
		if count[l] > 0 {
			count[l]--
		} else {
			missing = append(missing, l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if count[l] > 0 {
			count[l]--
			stale = append(stale, l)
		}
	}
	return missing, stale
}

func TestLineDiff(t *testing.T) {
	missing, stale := lineDiff("a\nb\nb\nc", "a\nb\nd")
	if diff := cmp.Diff([]string{"b", "c"}, missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"d"}, stale); diff != "" {
		t.Errorf("stale (-want +got):\n%s", diff)
	}
}

// The events' reasons are followed from their constants to the calls
// that record them, through a wrapper's parameters (each call of it with
// its own type), a local variable, a struct field and a function's result.
func TestEventReasonsOfTheCode(t *testing.T) {
	reasons, err := eventReasons(loadRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range reasons {
		got[r.reason] = slices.Sorted(maps.Keys(r.types))
	}
	cases := map[string]struct {
		reason    string
		wantTypes []string
	}{
		"through a wrapper, Warning only": {reason: "InvalidJob", wantTypes: []string{"Warning"}},
		"through a wrapper, Normal only":  {reason: "CreatedWorkload", wantTypes: []string{"Normal"}},
		"through a local variable":        {reason: "Stopped", wantTypes: []string{"Normal"}},
		"through a field and a result":    {reason: "FeatureDisabled", wantTypes: []string{"Warning"}},
		"a condition type, both types":    {reason: "Evicted", wantTypes: []string{"Normal", "Warning"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantTypes, got[tc.reason]); diff != "" {
				t.Errorf("types of %s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// checkSource type-checks one file of Go, which imports nothing, as the
// package at path.
func checkSource(t *testing.T, path, src string) *code {
	t.Helper()
	c := &code{fset: token.NewFileSet(), byPath: map[string]*pkg{}, constOf: map[types.Object]*constDecl{}}
	f, err := parser.ParseFile(c.fset, "src.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.add(&types.Config{}, &pkg{path: path, dir: "src", files: []*ast.File{f}}); err != nil {
		t.Fatal(err)
	}
	return c
}

const flowSource = `package p

const (
	A       = "A"
	B       = "B"
	Normal  = "Normal"
	Warning = "Warning"
)

type setting struct{ reason string }

func first(s []setting) (string, int) { return s[0].reason, len(s) }

func record(typ, reason string) {}

func wrap(typ, reason string) { record(typ, reason) }

func f() {
	wrap(Normal, A)
	wrap(Warning, B)
	r, _ := first([]setting{{reason: A}})
	record(Warning, r)
	x := "literal"
	record(Normal, x)
}
`

func TestFlowFollowsValues(t *testing.T) {
	c := checkSource(t, "p", flowSource)
	f := newFlow(c)
	var record *types.Func
	for fn := range f.calls {
		if fn.Name() == "record" {
			record = fn
		}
	}
	var got []string
	for _, call := range f.calls[record] {
		ways, err := f.argsOf(call, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range ways {
			typ, err1 := f.values(args[0])
			reason, err2 := f.values(args[1])
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			for _, r := range reason {
				named := "literal"
				if r.konst != nil {
					named = "constant " + r.konst.Name()
				}
				got = append(got, typ[0].s+" "+r.s+" ("+named+")")
			}
		}
	}
	slices.Sort(got)
	want := []string{"Normal A (constant A)", "Normal literal (literal)", "Warning A (constant A)", "Warning B (constant B)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(type, reason) of each way record is called (-want +got):\n%s", diff)
	}
}

func TestKeys(t *testing.T) {
	cases := map[string]struct {
		path, src string
		wantKeys  []key
		wantErr   string
	}{
		"a documented label of the API": {
			path:     apiPackage,
			src:      "package v1\n\nconst (\n\t// QLabel names a queue.\n\t// +berth:setBy=user,Berth\n\tQLabel = \"berth.dev/q\"\n\tGroup = \"berth.dev/v1\"\n)\n",
			wantKeys: []key{{name: "QLabel", value: "berth.dev/q", kind: "Label", setBy: "user, Berth", doc: []string{"QLabel names a queue."}}},
		},
		"no marker": {
			path:    apiPackage,
			src:     "package v1\n\n// QLabel names a queue.\nconst QLabel = \"berth.dev/q\"\n",
			wantErr: "no +berth:setBy marker",
		},
		"a name of no kind": {
			path:    apiPackage,
			src:     "package v1\n\n// QKey names a queue.\n// +berth:setBy=user\nconst QKey = \"berth.dev/q\"\n",
			wantErr: "ends in none of Label",
		},
		"a key outside the API": {
			path:    module + "/pkg/p",
			src:     "package p\n\nvar k = map[string]string{\"berth.dev/q\": \"x\"}\n",
			wantErr: `"berth.dev/q": a key of Berth's is a constant of`,
		},
		"an API version outside the API": {
			path: module + "/pkg/p",
			src:  "package p\n\nconst v = \"berth.dev/v1alpha1\"\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := checkSource(t, tc.path, tc.src)
			keys, err := apiKeys(c)
			if err == nil {
				err = keysOutsideAPI(c)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			case tc.wantErr == "":
				if diff := cmp.Diff(tc.wantKeys, keys, cmp.AllowUnexported(key{})); diff != "" {
					t.Errorf("keys (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestRegisteredMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_things_total", Help: `Things, "quoted".`}, []string{"cluster_queue", "reason"}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "other_gauge", Help: "Not Berth's.", ConstLabels: prometheus.Labels{"a": "b"}}),
	)
	got, err := registeredMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*metric{"berth_things_total": {name: "berth_things_total", help: `Things, "quoted".`, labels: []string{"cluster_queue", "reason"}}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(metric{})); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
