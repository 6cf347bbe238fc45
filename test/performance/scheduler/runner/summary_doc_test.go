package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestThePerformancePageExplainsEveryFigure: every field of summary.json
// is named on the site's performance page, in backquotes, alone or as the
// end of a dotted name (`controller.cpuSeconds`), so that a figure added
// to the summary is explained where users read it.
func TestThePerformancePageExplainsEveryFigure(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "site", "content", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := jsonNames(reflect.TypeFor[Summary]())
	if len(names) < 40 {
		t.Fatalf("found %d fields in the summary, want them all (at least 40)", len(names))
	}
	for _, name := range names {
		if !strings.Contains(string(page), "`"+name+"`") && !strings.Contains(string(page), "."+name+"`") {
			t.Errorf("performance.md does not name the summary's %s", name)
		}
	}
}

// jsonNames are the JSON names of the fields of t and, through structs,
// maps and embedded structs, of the structs it holds.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		ft := f.Type
		if ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() != "time" {
			names = append(names, jsonNames(ft)...)
		}
	}
	return names
}
