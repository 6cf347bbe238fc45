package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const repoRoot = "../.."

func TestTheSiteBuilds(t *testing.T) {
	s, err := build(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := s.write(repoRoot, out); err != nil {
		t.Fatal(err)
	}
	want := []string{"index", "getting-started", "concepts", "running-jobs", "admission", "observing", "kubectl-berth", "scheduler", "install", "from-kueue", "operations", "security", "troubleshooting", "performance",
		"reference-api", "reference-config", "reference-labels", "reference-metrics", "reference-events", "reference-kubectl-berth"}
	var got []string
	for _, p := range s.Pages {
		got = append(got, p.Slug)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("pages in order %v, want %v", got, want)
	}
	for _, slug := range want {
		html, err := os.ReadFile(filepath.Join(out, slug+".html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range want {
			if !strings.Contains(string(html), `href="`+other+`.html"`) {
				t.Errorf("%s.html does not link to %s.html in its navigation", slug, other)
			}
		}
	}
	for _, file := range []string{"style.css", "images/dashboard.png"} {
		if _, err := os.Stat(filepath.Join(out, file)); err != nil {
			t.Error(err)
		}
	}
}

// writeSite makes a repository in a temporary directory with the given
// files, paths relative to its root.
func writeSite(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestBuildRefusesWhatWouldBreakThePublishedSite(t *testing.T) {
	const b = "---\ntitle: B\nweight: 2\n---\n## Two words\n"
	for name, tc := range map[string]struct {
		page string
		want string
	}{
		"no front matter":       {"# A\n", "does not start with front matter"},
		"no title":              {"---\nweight: 1\n---\ntext\n", "has no title"},
		"unknown field":         {"---\ntitle: A\nwieght: 1\n---\ntext\n", `unknown field "wieght"`},
		"missing include":       {"---\ntitle: A\n---\n{{include \"config/none.yaml\"}}\n", `include "config/none.yaml"`},
		"include outside":       {"---\ntitle: A\n---\n{{include \"../etc/passwd\"}}\n", "not a path inside the repository"},
		"missing page":          {"---\ntitle: A\n---\nsee [c](c.md)\n", `link "c.md": no such page`},
		"missing heading":       {"---\ntitle: A\n---\nsee [b](b.md#two)\n", `b.md has no heading #two`},
		"missing own heading":   {"---\ntitle: A\n---\nsee [below](#below)\n", `a.md has no heading #below`},
		"repository file":       {"---\ntitle: A\n---\nsee [the README](../README.md)\n", `link "../README.md": no such page`},
		"raw HTML":              {"---\ntitle: A\n---\n<div>hi</div>\n", "raw HTML is not allowed"},
		"missing image":         {"---\ntitle: A\n---\n![x](images/none.png)\n", `image "images/none.png"`},
		"image elsewhere":       {"---\ntitle: A\n---\n![x](../_output/x.png)\n", "not a file of site/images"},
		"raw inline HTML":       {"---\ntitle: A\n---\nsome <b>bold</b>\n", "raw HTML is not allowed"},
		"good links, no errors": {"---\ntitle: A\n---\n## Below\n[b](b.md#two-words), [below](#below), [k](https://kubernetes.io)\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			root := writeSite(t, map[string]string{"site/content/a.md": tc.page, "site/content/b.md": b})
			_, err := build(root)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("build: %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("build: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestIncludeShowsTheFileAsItIs(t *testing.T) {
	root := writeSite(t, map[string]string{
		"config/q.yaml":      "kind: ClusterQueue\n",
		"hack/fence.md":      "```sh\nmake demo\n```",
		"site/content/a.md":  "---\ntitle: A\n---\nThe queue:\n{{include \"config/q.yaml\"}}\nA page:\n{{include \"hack/fence.md\"}}\n",
		"site/layout.html":   "{{.Page.HTML}}",
		"site/style.css":     "",
		"site/content/b.txt": "not a page",
	})
	s, err := build(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pages) != 1 {
		t.Fatalf("%d pages, want the one .md file", len(s.Pages))
	}
	body := string(s.Pages[0].Body)
	if want := "`config/q.yaml`:\n\n```yaml\nkind: ClusterQueue\n```\n"; !strings.Contains(body, want) {
		t.Errorf("body:\n%s\nwant it to hold:\n%s", body, want)
	}
	// A file with a fence of its own gets a longer one around it.
	if want := "````md\n```sh\nmake demo\n```\n````\n"; !strings.Contains(body, want) {
		t.Errorf("body:\n%s\nwant it to hold:\n%s", body, want)
	}
	if html := string(s.Pages[0].HTML); !strings.Contains(html, `<code class="language-yaml">kind: ClusterQueue`) {
		t.Errorf("HTML:\n%s\nwant the file in a YAML code block", html)
	}
}

func TestLinksToPagesPointAtTheirHTML(t *testing.T) {
	for dest, want := range map[string]string{
		"admission.md":            "admission.html",
		"admission.md#preemption": "admission.html#preemption",
		"#ordering":               "#ordering",
		"https://x.dev/a.md":      "https://x.dev/a.md",
	} {
		if got := htmlDestination(dest); got != want {
			t.Errorf("htmlDestination(%q) = %q, want %q", dest, got, want)
		}
	}
}

// constants returns the string constants of a Go file by name.
func constants(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}

func readPage(t *testing.T, slug string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "site", "content", slug+".md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// namesConstants fails the test unless the page names, in backquotes, the
// value of every string constant of the API's constants.go that want
// picks by name and value; at least min of them, so that a renamed file
// or prefix cannot make the check pass empty.
func namesConstants(t *testing.T, slug string, want func(name, value string) bool, min int) {
	t.Helper()
	page := readPage(t, slug)
	n := 0
	for name, value := range constants(t, filepath.Join(repoRoot, "apis", "berth", "v1alpha1", "constants.go")) {
		if !want(name, value) {
			continue
		}
		n++
		if !strings.Contains(page, "`"+value+"`") {
			t.Errorf("%s.md does not name %s (`%s`)", slug, name, value)
		}
	}
	if n < min {
		t.Errorf("found %d such constants in constants.go, want them all (at least %d)", n, min)
	}
}

func isLabel(name, _ string) bool {
	return strings.HasSuffix(name, "Label") || strings.HasSuffix(name, "Annotation")
}

// A condition type or reason added to the API and not to the page that
// explains them fails here. The berth.dev/ keys, the scheduling gate and
// the finalizer among them, are on reference-labels.md, which hack/refdocs
// writes and its test holds to the code.
func TestObservingExplainsEveryConditionAndReason(t *testing.T) {
	namesConstants(t, "observing", func(_, value string) bool { return !strings.HasPrefix(value, "berth.dev/") }, 20)
}

// Every label and annotation a user puts on a job, or finds on its pods, is
// explained where running jobs is.
func TestRunningJobsExplainsEveryLabel(t *testing.T) {
	namesConstants(t, "running-jobs", isLabel, 5)
}

// The columns the page lists are the ones kubectl shows, which the CRDs
// define.
func TestObservingListsEveryColumn(t *testing.T) {
	page := readPage(t, "observing")
	crds, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(crds) < 6 {
		t.Fatalf("CRDs: %v (%d found)", err, len(crds))
	}
	for _, path := range crds {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Names    struct{ Kind string }
				Versions []struct {
					AdditionalPrinterColumns []struct{ Name string }
				}
			}
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			for _, c := range v.AdditionalPrinterColumns {
				if col := strings.ToUpper(c.Name); !strings.Contains(page, col) {
					t.Errorf("observing.md does not list the %s column %s", crd.Spec.Names.Kind, col)
				}
			}
		}
	}
}
