// Command refdocs writes the site's reference pages that list the names
// Berth's code defines, from the code itself:
//
//   - reference-labels.md: the berth.dev/ keys (labels, annotations, the
//     scheduling gate, the finalizer, the admission check's names) of
//     apis/berth/v1alpha1, with their doc comments and who sets them;
//   - reference-metrics.md: the metrics pkg/metrics registers, with their
//     types, labels and help;
//   - reference-events.md: the reasons of the events Berth records, found
//     from the calls that record them, and the condition types and
//     reasons of apis/berth/v1alpha1;
//   - reference-kubectl-berth.md: the commands of kubectl berth and their
//     flags, from its cobra command tree.
//
// `make apiref` runs it:
//
//	go run ./hack/refdocs -out site/content
//
// It type-checks Berth's packages (apis, pkg, cmd) from their sources to
// follow a reason from the constant to the call that records it. It fails
// on a name it cannot place: a berth.dev/ key outside the API, an event
// reason that is not a named constant, a metric pkg/metrics does not
// register. `make verify` fails when the pages differ from what it
// writes; its test fails the same way under `make test-unit`, naming the
// lines.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// page is one generated page of the site.
type page struct {
	slug, title string
	weight      int
	// source says what the page is generated from.
	source string
	intro  string
	body   func(c *code) (string, error)
}

var pages = []page{
	{
		slug: "reference-labels", title: "Labels and annotations reference", weight: 97,
		source: "the constants of `apis/berth/v1alpha1`",
		intro:  "Every `berth.dev/` key Berth defines: the labels and annotations you put on your jobs and those Berth puts on the objects it manages, its scheduling gate and finalizer, and the names of its own admission check. How they are used is in [running jobs](running-jobs.md) and [observing](observing.md#finding-the-workload-of-a-job).",
		body:   labelsPage,
	},
	{
		slug: "reference-metrics", title: "Metrics reference", weight: 98,
		source: "the collectors `pkg/metrics` registers",
		intro:  "Every metric of Berth's own that the controller serves on `/metrics`, beside controller-runtime's. What to alert on is in [observing](observing.md#metrics).",
		body:   metricsPage,
	},
	{
		slug: "reference-events", title: "Events and conditions reference", weight: 99,
		source: "the calls that record events and the constants of `apis/berth/v1alpha1`",
		intro:  "The reasons of the events Berth records, and the types and reasons of the conditions of its objects. What they tell, with examples of their messages, is in [observing](observing.md#events).",
		body:   eventsPage,
	},
	{
		slug: "reference-kubectl-berth", title: "kubectl berth reference", weight: 100,
		source: "the plugin's command tree in `pkg/kubectlberth`",
		intro:  "Every command of the plugin and every flag, as `kubectl berth --help` shows them. The commands at work are in [kubectl berth](kubectl-berth.md).",
		body:   kubectlPage,
	},
}

func main() {
	root := flag.String("root", ".", "The repository's root.")
	out := flag.String("out", "site/content", "The folder to write the pages to.")
	flag.Parse()
	// kubectl's flags take their cache's default from KUBECACHEDIR: the
	// page shows the default of a user who has not set it.
	os.Unsetenv("KUBECACHEDIR")
	if err := run(*root, *out); err != nil {
		fmt.Fprintln(os.Stderr, "refdocs:", err)
		os.Exit(1)
	}
}

func run(root, out string) error {
	c, err := load(root, "./apis/...", "./pkg/...", "./cmd/...")
	if err != nil {
		return err
	}
	for _, p := range pages {
		text, err := p.render(c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, p.slug+".md"), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// render is the page's Markdown: its front matter, where it comes from,
// its introduction and its body.
func (p page) render(c *code) (string, error) {
	body, err := p.body(c)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.slug, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %s\nweight: %d\n---\n\n", p.title, p.weight)
	fmt.Fprintf(&b, "This page is generated from %s (hack/refdocs).\n\n", p.source)
	fmt.Fprintf(&b, "%s\n\n", p.intro)
	b.WriteString(body)
	return b.String(), nil
}

// table writes a Markdown table; each cell is made to fit.
func table(b *strings.Builder, header []string, rows [][]string) {
	fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, s := range row {
			cells[i] = cell(s)
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
	b.WriteString("\n")
}

// cell makes text fit in a table cell: on one line, with its pipes
// escaped.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// prose makes a comment's text safe as Markdown: a comment's <uid> is a
// placeholder, not HTML, which the site refuses.
func prose(lines []string) string {
	return escapeText(strings.Join(lines, " "))
}

// codeSpan is s in backquotes.
func codeSpan(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}
