package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	mdast "github.com/yuin/goldmark/ast"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"
)

// The claims test holds the pages of the site and the README to the code:
// every make target, kubectl berth command and flag, metric name, berth.dev
// label or annotation key, configuration field, condition type and reason
// of a condition or an event they name must exist, so that a rename in the
// code fails `make test` until the pages follow.
//
// What it reads:
//   - make targets, kubectl berth commands and their flags, in code: the
//     inline code spans and the lines of fenced code blocks (prose such as
//     "make room" is not a make target);
//   - configuration field paths, in inline code spans that are a dotted
//     path (`waitForPodsReady.timeout`, `metrics.secureServing: true`)
//     whose first segment is a top-level field of the Configuration;
//   - metric names (berth_...) and berth.dev/ keys, anywhere;
//   - condition types, reasons and event types and actions, in inline code
//     spans that the prose or the table around them calls a reason, a
//     condition or an event (see reasonClaims).

// facts are the names the code defines, read from its sources.
type facts struct {
	makeTargets map[string]bool
	commands    map[string]bool
	// flags are the flag names (long, and one-letter shorthands) of
	// kubectl berth's own commands.
	flags map[string]bool
	// kubectlFlags is a flag set with kubectl's own flags, which every
	// kubectl berth command takes (--context, -n, ...).
	kubectlFlags *cobra.Command
	metrics      map[string]bool
	keys         map[string]bool
	// config is the configuration's types: per struct, its fields' JSON
	// names and the struct each holds ("" for a type of another package
	// or a scalar).
	config map[string]map[string]string
	// chartValues are the Helm chart's values, whose paths share some
	// first segments with the configuration's (metrics.serviceMonitor).
	chartValues map[string]any
	// reasons are the condition types and reasons, and the event reasons,
	// types and actions, a page may name (see reasonNames).
	reasons map[string]bool
}

// problem is a name a page writes that the code does not define.
type problem struct {
	line int
	what string
	name string
}

func (p problem) String() string {
	return fmt.Sprintf("line %d: %s %q", p.line, p.what, p.name)
}

func TestPagesNameOnlyWhatExists(t *testing.T) {
	f := readFacts(t, repoRoot)
	pages, err := filepath.Glob(filepath.Join(repoRoot, "site", "content", "*.md"))
	if err != nil || len(pages) < 10 {
		t.Fatalf("pages: %v (%d found)", err, len(pages))
	}
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	for _, path := range pages {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, path)
		for _, p := range f.check(string(src)) {
			t.Errorf("%s, %s, which the code does not define", rel, p)
		}
	}
}

// The checker finds each kind of wrong name, on its line, and lets the
// right ones through.
func TestClaimsCheckerFindsWrongNames(t *testing.T) {
	f := readFacts(t, repoRoot)
	cases := map[string]struct {
		page string
		want []string
	}{
		"names that exist": {
			page: "Run `make demo`, then `make generate apiref`:\n\n" +
				"```sh\nmake local-up   # start the cluster\nBERTH_LOG_LEVEL=3 make local-up\n" +
				"kubectl berth stop clusterqueue team-a --drain  # evict what it admitted\n" +
				"kubectl berth usage --context prod -o json\n```\n\n" +
				"`kubectl berth audit -A` and `kubectl berth why job/NAME -n team-a`; " +
				"`berth_admission_wait_time_seconds_bucket`, `berth_evicted_workloads_total`, " +
				"`berth.dev/queue-name`, `gpu.berth.dev/family`, `berth.dev/v1alpha1`, " +
				"`waitForPodsReady.requeuingStrategy.backoffLimitCount`, `metrics.secureServing: true`, " +
				"`integrations.podOptions.namespaceSelector`, `spec.fairSharing.weight`.\n" +
				"Prose may make room and make demo does not count.\n",
		},
		"a wrong make target": {
			page: "Some text.\n\nThen `make tset`.\n",
			want: []string{`line 3: make target "tset"`},
		},
		"a wrong make target in a code block": {
			page: "```sh\nmake demo\nmake deploy   # not a target\n```\n",
			want: []string{`line 3: make target "deploy"`},
		},
		"a wrong kubectl berth command": {
			page: "One.\nTwo: `kubectl berth explain job/a`.\n",
			want: []string{`line 2: kubectl berth command "explain"`},
		},
		"a wrong kubectl berth flag": {
			page: "```sh\nkubectl berth stop clusterqueue a --evict\nkubectl berth audit -Z\n```\n",
			want: []string{`line 2: kubectl berth flag "--evict"`, `line 3: kubectl berth flag "-Z"`},
		},
		"a wrong metric": {
			page: "Alert on\n`berth_admitted_total` or berth_pending_workloads_count.\n",
			want: []string{`line 2: metric "berth_admitted_total"`},
		},
		"a wrong key": {
			page: "The label `berth.dev/queue` names the queue.\n",
			want: []string{`line 1: label or annotation key "berth.dev/queue"`},
		},
		"a wrong configuration field": {
			page: "Set\n\n`waitForPodsReady.timout` or `metrics.secure: true`.\n",
			want: []string{`line 3: configuration field "waitForPodsReady.timout"`, `line 3: configuration field "metrics.secure"`},
		},
		"condition and event names that exist, and words that are not reasons": {
			page: "It is `False` with reason `Pending`; the `Warning` event `InvalidJob`; the `Evicted`\n" +
				"reasons `Preempted`, `Deactivated` or `AdmissionCheck`. `Evicted=True`, `Provisioned=True`.\n" +
				"With `HoldAndDrain` its workloads are evicted with reason `ClusterQueueStopped`. The state\n" +
				"(`Inactive`), the reason. The reason is `BeyondAdmission`.\n\n" +
				"| type | reason | action | when |\n|---|---|---|---|\n| `Normal` | `Admitted` | `Run` | `Later` |\n\n" +
				"| value | admits |\n|---|---|\n| `None` (default) | yes |\n\n" +
				"```sh\nkubectl get events --field-selector reason=Prempted\n```\n",
		},
		"a wrong reason": {
			page: "The workload is\nevicted with reason `Prempted`.\n",
			want: []string{`line 2: condition or event name "Prempted"`},
		},
		"a wrong reason in a list": {
			page: "The `Evicted` reasons `Preempted`, `Deactivted` or `AdmissionCheck`.\n",
			want: []string{`line 1: condition or event name "Deactivted"`},
		},
		"a wrong condition with its status": {
			page: "Wait for `AdmittedNow=True`.\n",
			want: []string{`line 1: condition or event name "AdmittedNow"`},
		},
		"a wrong condition before its noun": {
			page: "Its `QuotaReserve` condition says why.\n",
			want: []string{`line 1: condition or event name "QuotaReserve"`},
		},
		"a wrong event": {
			page: "A `Warning` event `JobInvalid` names the field.\n",
			want: []string{`line 1: condition or event name "JobInvalid"`},
		},
		"wrong names in a table of reasons": {
			page: "Text.\n\n| reason | fix |\n|---|---|\n| `FlavorMissing` | create the flavor |\n" +
				"| `Stopped` | resume it |\n\n| type | reason | action |\n|---|---|---|\n| `Warn` | `InvalidJob` | `Create` |\n",
			want: []string{`line 5: condition or event name "FlavorMissing"`, `line 10: condition or event name "Warn"`, `line 10: condition or event name "Create"`},
		},
		"an inline span over two lines": {
			page: "Run `kubectl berth\nstatus` now.\n",
			want: []string{`line 1: kubectl berth command "status"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, p := range f.check(tc.page) {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// readFacts reads what the code defines from the repository at root. It
// fails when a kind of fact comes out nearly empty, so that a moved file
// cannot make every page pass.
func readFacts(t *testing.T, root string) *facts {
	t.Helper()
	f := &facts{
		makeTargets: makeTargets(t, filepath.Join(root, "Makefile")),
		commands:    map[string]bool{"help": true, "completion": true},
		flags:       map[string]bool{"help": true, "h": true},
		metrics:     stringsIn(t, filepath.Join(root, "pkg", "metrics"), regexp.MustCompile(`^berth_[a-z_]+$`)),
		keys:        map[string]bool{},
		config:      configTypes(t, filepath.Join(root, "apis", "config", "v1alpha1")),
		chartValues: chartValues(t, filepath.Join(root, "charts", "berth", "values.yaml")),
		reasons:     reasonNames(t, root),
	}
	kubectlBerthSources(t, filepath.Join(root, "pkg", "kubectlberth"), f)
	f.kubectlFlags = &cobra.Command{}
	genericclioptions.NewConfigFlags(true).AddFlags(f.kubectlFlags.PersistentFlags())
	key := regexp.MustCompile(`^berth\.dev/[a-z0-9][a-z0-9.-]*$`)
	for _, dir := range []string{"apis", "pkg"} {
		for k := range stringsIn(t, filepath.Join(root, dir), key) {
			f.keys[k] = true
		}
	}
	// Keys that only the installed manifests carry, such as the
	// namespace label the metrics NetworkPolicy admits.
	for k := range yamlKeys(t, filepath.Join(root, "config")) {
		f.keys[k] = true
	}
	for what, n := range map[string]int{
		"make targets": len(f.makeTargets), "kubectl berth commands": len(f.commands), "kubectl berth flags": len(f.flags),
		"metrics": len(f.metrics), "berth.dev keys": len(f.keys), "configuration fields": len(f.config[configurationType]),
		"condition and event names": len(f.reasons),
	} {
		if n < 5 {
			t.Fatalf("found %d %s in the code, want more: did a file move?", n, what)
		}
	}
	return f
}

var targetLine = regexp.MustCompile(`^([A-Za-z0-9_.-]+):`)

// makeTargets are the targets the Makefile defines, one `name:` a line.
func makeTargets(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := targetLine.FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[1], ".") {
			out[m[1]] = true
		}
	}
	return out
}

// goFiles parses the non-test Go files under dir.
func goFiles(t *testing.T, dir string) []*ast.File {
	t.Helper()
	var files []*ast.File
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// stringsIn returns the string literals of the Go files under dir that
// match re.
func stringsIn(t *testing.T, dir string, re *regexp.Regexp) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range goFiles(t, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := stringLit(n); ok && re.MatchString(s) {
				out[s] = true
			}
			return true
		})
	}
	return out
}

func stringLit(n ast.Node) (string, bool) {
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

var yamlKey = regexp.MustCompile(`(?:^|[^a-z0-9.-])(berth\.dev/[a-z0-9][a-z0-9.-]*[a-z0-9])`)

// yamlKeys are the berth.dev/ keys written in the YAML files under dir.
func yamlKeys(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range yamlKey.FindAllStringSubmatch(string(data), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlBerthSources reads the commands and flags of kubectl berth from
// its sources: the first word of each cobra Use (a literal, or a variable
// the file assigns literals to, as stop and resume share one), and the
// names of the flags registered on Flags() and PersistentFlags().
func kubectlBerthSources(t *testing.T, dir string, f *facts) {
	t.Helper()
	for _, file := range goFiles(t, dir) {
		assigned := map[string][]string{}
		ast.Inspect(file, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, lhs := range as.Lhs {
					if id, ok := lhs.(*ast.Ident); ok {
						if s, ok := stringLit(as.Rhs[i]); ok {
							assigned[id.Name] = append(assigned[id.Name], s)
						}
					}
				}
			}
			return true
		})
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Use" {
					for _, use := range useValues(n.Value, assigned) {
						if words := strings.Fields(use); len(words) > 0 {
							f.commands[words[0]] = true
						}
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || !isFlagSet(sel.X) {
					return true
				}
				var lits []string
				for _, arg := range n.Args {
					if s, ok := stringLit(arg); ok {
						lits = append(lits, s)
					}
				}
				if len(lits) > 0 {
					f.flags[lits[0]] = true
				}
				if strings.HasSuffix(sel.Sel.Name, "P") && len(lits) > 1 {
					f.flags[lits[1]] = true
				}
			}
			return true
		})
	}
}

// useValues are the strings a cobra Use can start with: the literal, or
// for `verb + "..."` every literal assigned to verb.
func useValues(e ast.Expr, assigned map[string][]string) []string {
	if s, ok := stringLit(e); ok {
		return []string{s}
	}
	if bin, ok := e.(*ast.BinaryExpr); ok && bin.Op == token.ADD {
		if id, ok := bin.X.(*ast.Ident); ok {
			return assigned[id.Name]
		}
		return useValues(bin.X, assigned)
	}
	return nil
}

// isFlagSet reports whether e is x.Flags() or x.PersistentFlags().
func isFlagSet(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Flags" || sel.Sel.Name == "PersistentFlags")
}

const configurationType = "Configuration"

// chartValues reads the chart's values file.
func chartValues(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return values
}

// isChartValue reports whether the chart has a value at the path.
func (f *facts) isChartValue(segments []string) bool {
	var v any = f.chartValues
	for _, seg := range segments {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}

// configTypes reads the structs of the configuration's package: per
// struct, each field's JSON name and the struct of that package it holds,
// through pointers, slices and maps.
func configTypes(t *testing.T, dir string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, file := range goFiles(t, dir) {
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				fields := map[string]string{}
				for _, field := range st.Fields.List {
					if field.Tag == nil {
						continue
					}
					tag, _ := strconv.Unquote(field.Tag.Value)
					name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
					if name == "" {
						continue
					}
					fields[name] = localType(field.Type)
				}
				out[ts.Name.Name] = fields
			}
		}
	}
	return out
}

// localType is the name of the type of this package that e holds, "" when
// it holds another package's type or a scalar.
func localType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return localType(e.X)
	case *ast.ArrayType:
		return localType(e.Elt)
	case *ast.MapType:
		return localType(e.Value)
	case *ast.Ident:
		// Unqualified and exported: a type of this package.
		if ast.IsExported(e.Name) {
			return e.Name
		}
	}
	return ""
}

// span is code as a page writes it: an inline code span, or a line of a
// fenced code block.
type span struct {
	line   int
	text   string
	inline bool
}

var (
	fence      = regexp.MustCompile("^\\s*```")
	inlineCode = regexp.MustCompile("`([^`]+)`")
)

// spans returns the code of a page, each piece with the line it starts on.
func spans(page string) []span {
	lines := strings.Split(page, "\n")
	var out []span
	prose := make([]string, len(lines))
	inFence := false
	for i, line := range lines {
		switch {
		case fence.MatchString(line):
			inFence = !inFence
		case inFence:
			out = append(out, span{line: i + 1, text: line})
		default:
			prose[i] = line
		}
	}
	text := strings.Join(prose, "\n")
	for _, m := range inlineCode.FindAllStringSubmatchIndex(text, -1) {
		line := 1 + strings.Count(text[:m[0]], "\n")
		out = append(out, span{line: line, text: text[m[2]:m[3]], inline: true})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].line < out[j].line })
	return out
}

var (
	// make where a command starts, after any VAR=value: not "to make
	// room" in a message.
	makeCommand  = regexp.MustCompile(`(?:^\s*|[;&|(]\s*)(?:[A-Z_][A-Z0-9_]*=\S*\s+)*make((?:[ \t]+[A-Za-z0-9_.=/-]+)+)`)
	kubectlBerth = regexp.MustCompile(`kubectl\s+berth((?:\s+[^\s#;|&)]+)*)`)
	configPath   = regexp.MustCompile(`^([a-z][A-Za-z0-9]*(?:\.[a-z][A-Za-z0-9]*)+)(?::|$|\s)`)
	metricName   = regexp.MustCompile(`berth_[a-z_]*[a-z]`)
	berthKey     = regexp.MustCompile(`berth\.dev/[a-z0-9][a-z0-9.-]*[a-z0-9]`)
	apiVersion   = regexp.MustCompile(`^berth\.dev/v[0-9]+((alpha|beta)[0-9]+)?$`)
)

// check returns the names of a page that the code does not define, in the
// order of the page.
func (f *facts) check(page string) []problem {
	var out []problem
	for _, s := range spans(page) {
		out = append(out, f.checkMake(s)...)
		out = append(out, f.checkKubectlBerth(s)...)
		if s.inline {
			out = append(out, f.checkConfigPath(s)...)
		}
	}
	for i, line := range strings.Split(page, "\n") {
		if strings.Contains(line, "{{include") {
			continue
		}
		out = append(out, f.checkMetrics(i+1, line)...)
		out = append(out, f.checkKeys(i+1, line)...)
	}
	for _, c := range reasonClaims([]byte(page)) {
		if !f.reasons[c.name] {
			out = append(out, problem{c.line, "condition or event name", c.name})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].line < out[j].line })
	return out
}

func (f *facts) checkMake(s span) []problem {
	var out []problem
	for _, m := range makeCommand.FindAllStringSubmatch(s.text, -1) {
		for _, word := range strings.Fields(m[1]) {
			if strings.Contains(word, "=") {
				continue
			}
			if !f.makeTargets[word] {
				out = append(out, problem{s.line, "make target", word})
			}
		}
	}
	return out
}

func (f *facts) checkKubectlBerth(s span) []problem {
	var out []problem
	for _, m := range kubectlBerth.FindAllStringSubmatchIndex(s.text, -1) {
		// The line the command starts on, in a span over several lines.
		line := s.line + strings.Count(s.text[:m[0]], "\n")
		words := strings.Fields(s.text[m[2]:m[3]])
		for i, w := range words {
			switch {
			case strings.HasPrefix(w, "--"):
				name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
				if !f.flags[name] && f.kubectlFlags.PersistentFlags().Lookup(name) == nil {
					out = append(out, problem{line, "kubectl berth flag", "--" + name})
				}
			case len(w) == 2 && w[0] == '-':
				if !f.flags[w[1:]] && f.kubectlFlags.PersistentFlags().ShorthandLookup(w[1:]) == nil {
					out = append(out, problem{line, "kubectl berth flag", w})
				}
			case i == 0 && w[0] >= 'a' && w[0] <= 'z':
				if !f.commands[w] {
					out = append(out, problem{line, "kubectl berth command", w})
				}
			}
		}
	}
	return out
}

func (f *facts) checkConfigPath(s span) []problem {
	m := configPath.FindStringSubmatch(s.text)
	if m == nil {
		return nil
	}
	segments := strings.Split(m[1], ".")
	typ := configurationType
	if _, ok := f.config[typ][segments[0]]; !ok {
		return nil
	}
	for _, seg := range segments {
		fields, ok := f.config[typ]
		if !ok {
			// A type of another package, such as a label selector: the
			// path goes on where this package does not describe it.
			return nil
		}
		next, ok := fields[seg]
		if !ok {
			if f.isChartValue(segments) {
				// A value of the Helm chart, as install.md lists them.
				return nil
			}
			return []problem{{s.line, "configuration field", m[1]}}
		}
		typ = next
	}
	return nil
}

func (f *facts) checkMetrics(line int, text string) []problem {
	var out []problem
	for _, loc := range metricName.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && strings.ContainsAny(text[loc[0]-1:loc[0]], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") {
			continue
		}
		name := text[loc[0]:loc[1]]
		if !f.metric(name) {
			out = append(out, problem{line, "metric", name})
		}
	}
	return out
}

// metric reports whether name is a metric, or one of the series
// Prometheus makes of a histogram.
func (f *facts) metric(name string) bool {
	if f.metrics[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && f.metrics[base] {
			return true
		}
	}
	return false
}

func (f *facts) checkKeys(line int, text string) []problem {
	var out []problem
	for _, loc := range berthKey.FindAllStringIndex(text, -1) {
		// gpu.berth.dev/family is a key of another prefix.
		if loc[0] > 0 && strings.ContainsAny(text[loc[0]-1:loc[0]], "abcdefghijklmnopqrstuvwxyz0123456789.-") {
			continue
		}
		key := text[loc[0]:loc[1]]
		if !f.keys[key] && !apiVersion.MatchString(key) {
			out = append(out, problem{line, "label or annotation key", key})
		}
	}
	return out
}

var (
	// reasonSpan is an inline code span that may name a reason, a
	// condition type or an event's type or action: one UpperCamelCase
	// word, alone or with a condition's status (`Evicted=True`).
	reasonSpan = regexp.MustCompile(`^([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*)(=(?:True|False|Unknown))?$`)
	// reasonBefore and reasonAfter are the prose that makes a span a
	// reason when it comes right before it ("with reason X", "reasons X,
	// Y or Z", "the Warning event X") or right after it ("the X
	// condition", "X or Y reasons"), other spans of a list between.
	reasonBefore = regexp.MustCompile(`(?i)\b(?:reasons?|conditions?|events?)(?:[\s,:]|\bor\b|\band\b)*$`)
	reasonAfter  = regexp.MustCompile(`(?i)^(?:[\s,]|\bor\b|\band\b)*(?:reasons?|conditions?|events?)\b`)
	// reasonTable is a table's header that says its rows are reasons,
	// conditions or events; reasonColumn, the header of a column of
	// such a table that holds their names.
	reasonTable  = regexp.MustCompile(`(?i)\b(?:reasons?|conditions?|events?)\b`)
	reasonColumn = regexp.MustCompile(`(?i)^\s*(?:type|reasons?|conditions?|actions?|events?)\s*$`)
	// conditionStatus are the statuses of a condition, which pages write
	// beside its reasons.
	conditionStatus = map[string]bool{"True": true, "False": true, "Unknown": true}
)

// reasonClaim is a name a page gives as a reason, a condition type, or an
// event's type or action.
type reasonClaim struct {
	line int
	name string
}

// reasonClaims are the names a page gives as reasons, condition types or
// event types and actions, in the order of the page. A name counts when it
// is an UpperCamelCase word in backquotes and
//   - it is written with a status (`Evicted=True`): a condition type;
//   - or the prose right before or after it says reason, condition or
//     event: "with reason `Pending`", "the `Warning` event `InvalidJob`",
//     "the `Evicted` reasons", "reasons `A`, `B` or `C`";
//   - or it is in a table about reasons, conditions or events, in the
//     column of their names, types or actions (| type | reason | action |
//     when |).
//
// Words in backquotes elsewhere in a sentence about reasons (a stop
// policy's `HoldAndDrain`, the state `Inactive` kubectl berth why prints)
// and code blocks are not claims of a reason; the statuses `True`,
// `False` and `Unknown` are not names.
func reasonClaims(page []byte) []reasonClaim {
	doc := markdown.Parser().Parse(text.NewReader(page))
	var out []reasonClaim
	_ = mdast.Walk(doc, func(n mdast.Node, entering bool) (mdast.WalkStatus, error) {
		span, ok := n.(*mdast.CodeSpan)
		if !entering || !ok {
			return mdast.WalkContinue, nil
		}
		start, end, content := codeSpanContent(span, page)
		m := reasonSpan.FindStringSubmatch(content)
		if m == nil || conditionStatus[m[1]] {
			return mdast.WalkSkipChildren, nil
		}
		if m[2] != "" || nearReasonWord(span, start, end, page) || inReasonColumn(span, page) {
			out = append(out, reasonClaim{line: 1 + bytes.Count(page[:start], []byte("\n")), name: m[1]})
		}
		return mdast.WalkSkipChildren, nil
	})
	return out
}

// codeSpanContent is where a code span's text starts and ends in the
// page, and the text.
func codeSpanContent(span *mdast.CodeSpan, page []byte) (int, int, string) {
	start, end := -1, 0
	var b strings.Builder
	for c := span.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*mdast.Text); ok {
			if start < 0 {
				start = t.Segment.Start
			}
			end = t.Segment.Stop
			b.Write(t.Segment.Value(page))
		}
	}
	return max(start, 0), end, b.String()
}

// blockOf is the block a span is in (a paragraph, a list item's text, a
// heading, a table cell), with the part of the page it spans.
func blockOf(n mdast.Node) (mdast.Node, int, int) {
	for b := n.Parent(); b != nil; b = b.Parent() {
		if b.Type() != mdast.TypeBlock {
			continue
		}
		lines := b.Lines()
		if lines.Len() == 0 {
			return nil, 0, 0
		}
		return b, lines.At(0).Start, lines.At(lines.Len() - 1).Stop
	}
	return nil, 0, 0
}

// nearReasonWord reports whether the prose of the span's block right
// before or after the span, from start to end in the page, says reason,
// condition or event.
func nearReasonWord(span *mdast.CodeSpan, start, end int, page []byte) bool {
	block, from, to := blockOf(span)
	if block == nil || start < from || end > to {
		return false
	}
	// The block's code, blanked, is no context: a list of spans reads as
	// spaces and commas.
	prose := []byte(inlineCode.ReplaceAllStringFunc(string(page[from:to]), func(s string) string {
		return strings.Repeat(" ", len(s))
	}))
	// The span's own backquotes.
	before, after := prose[:max(start-from-1, 0)], prose[min(end-from+1, len(prose)):]
	return reasonBefore.Match(before) || reasonAfter.Match(after)
}

// inReasonColumn reports whether the span is in the body of a table whose
// header says reason, condition or event, in a column of names (type,
// reason, condition, action, event).
func inReasonColumn(span *mdast.CodeSpan, page []byte) bool {
	column, headers, ok := tableColumn(span, page)
	return ok && reasonColumn.MatchString(column) && reasonTable.MatchString(strings.Join(headers, " "))
}

// columnOf is the header of the span's column, when the span is in the
// body of a table.
func columnOf(span *mdast.CodeSpan, page []byte) (string, bool) {
	column, _, ok := tableColumn(span, page)
	return column, ok
}

// tableColumn is the header of the span's column and the table's headers,
// when the span is in the body of a table.
func tableColumn(span *mdast.CodeSpan, page []byte) (string, []string, bool) {
	block, _, _ := blockOf(span)
	cell, ok := block.(*extast.TableCell)
	if !ok {
		return "", nil, false
	}
	row, ok := cell.Parent().(*extast.TableRow)
	if !ok {
		return "", nil, false // a span of the header itself
	}
	header, ok := row.Parent().FirstChild().(*extast.TableHeader)
	if !ok {
		return "", nil, false
	}
	column := 0
	for c := cell.PreviousSibling(); c != nil; c = c.PreviousSibling() {
		column++
	}
	var headers []string
	for h := header.FirstChild(); h != nil; h = h.NextSibling() {
		var name string
		if h.Lines().Len() > 0 {
			seg := h.Lines().At(0)
			name = strings.TrimSpace(string(seg.Value(page)))
		}
		headers = append(headers, name)
	}
	if column >= len(headers) {
		return "", nil, false
	}
	return headers[column], headers, true
}

// reasonNames are the names a page may give as a condition's type or
// reason, or an event's reason, type or action:
//   - Berth's own, as the generated reference-events.md lists them:
//     hack/refdocs writes that page from the calls that record events and
//     the API's constants of condition types and reasons, and its test
//     fails when the page is not what the code says, so the page is the
//     code's list, read here without type-checking the code again;
//   - the conditions of a ProvisioningRequest (apis/autoscaling/v1),
//     which Berth's admission check reads;
//   - the reasons kubectl berth audit gives a pod (pkg/engine/audit).
func reasonNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	path := filepath.Join(root, "site", "content", "reference-events.md")
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	// Every span of the page's tables but their descriptions: the
	// reasons, types and actions of events, the values of conditions.
	doc := markdown.Parser().Parse(text.NewReader(page))
	_ = mdast.Walk(doc, func(n mdast.Node, entering bool) (mdast.WalkStatus, error) {
		span, ok := n.(*mdast.CodeSpan)
		if !entering || !ok {
			return mdast.WalkContinue, nil
		}
		if column, ok := columnOf(span, page); ok && column != "description" {
			_, _, name := codeSpanContent(span, page)
			out[name] = true
		}
		return mdast.WalkSkipChildren, nil
	})
	if len(out) < 20 {
		t.Fatalf("%s lists %d event and condition names, want more: did its tables change?", path, len(out))
	}
	for _, v := range constants(t, filepath.Join(root, "apis", "autoscaling", "v1", "provisioningrequest_types.go")) {
		if reasonSpan.MatchString(v) {
			out[v] = true
		}
	}
	for name, v := range constants(t, filepath.Join(root, "pkg", "engine", "audit", "audit.go")) {
		if strings.HasPrefix(name, "Reason") {
			out[v] = true
		}
	}
	return out
}
