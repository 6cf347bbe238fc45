package engine

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// clientPrefixes are the import paths that reach the API server. A
// generated clientset is caught by its last element wherever it lives.
var clientPrefixes = []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go"}

// clientImport reports whether path is a package that talks to the API
// server, or a generated clientset.
func clientImport(path string) bool {
	for _, p := range clientPrefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return slices.Contains(strings.Split(path, "/"), "clientset")
}

// TestEngineImportsNoClient walks everything the packages under pkg/engine
// depend on, directly or not, and fails naming, for each package that can
// reach the API server, the chain of imports that leads there.
func TestEngineImportsNoClient(t *testing.T) {
	const module = "github.com/berth-dev/berth/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		if fields := strings.Fields(line); len(fields) > 0 {
			imports[fields[0]] = fields[1:]
		}
	}
	// The graph must hold the scheduler, or the check passes empty.
	if _, ok := imports[module+"pkg/engine/scheduler"]; !ok {
		t.Fatalf("go list does not list the scheduler:\n%s", out)
	}
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		if !strings.HasPrefix(pkg, module+"pkg/engine") {
			continue
		}
		if chain := clientChain(imports, pkg); chain != nil {
			t.Errorf("%s reaches the API server: %s", strings.TrimPrefix(pkg, module), strings.ReplaceAll(strings.Join(chain, " -> "), module, ""))
		}
	}
}

// clientChain returns the shortest chain of imports from pkg to a client
// package, or nil when there is none.
func clientChain(imports map[string][]string, pkg string) []string {
	from := map[string]string{pkg: ""}
	next := []string{pkg}
	for len(next) > 0 {
		p := next[0]
		next = next[1:]
		if clientImport(p) {
			var chain []string
			for ; p != ""; p = from[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, dep := range imports[p] {
			if _, seen := from[dep]; !seen {
				from[dep] = p
				next = append(next, dep)
			}
		}
	}
	return nil
}

func TestClientImport(t *testing.T) {
	cases := map[string]struct {
		path string
		want bool
	}{
		"controller-runtime":            {path: "sigs.k8s.io/controller-runtime", want: true},
		"controller-runtime cache":      {path: "sigs.k8s.io/controller-runtime/pkg/cache", want: true},
		"client-go":                     {path: "k8s.io/client-go/tools/cache", want: true},
		"generated clientset":           {path: "example.com/x/client/clientset/versioned", want: true},
		"api types":                     {path: "k8s.io/api/core/v1", want: false},
		"component-helpers":             {path: "k8s.io/component-helpers/resource", want: false},
		"a name that only starts alike": {path: "k8s.io/client-gopher", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := clientImport(tc.path); got != tc.want {
				t.Errorf("clientImport(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}
