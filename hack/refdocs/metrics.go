package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/types"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	berthmetrics "github.com/berth-dev/berth/pkg/metrics"
)

// metricPrefix starts the names of Berth's own metrics.
const metricPrefix = "berth_"

// metric is one of Berth's metrics.
type metric struct {
	name, help string
	labels     []string
	// typ and buckets are read from the code that defines the metric.
	typ, buckets string
}

// descString is how a prometheus.Desc prints itself, the only way it
// tells its name, help and labels.
var descString = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "(?:[^"\\]|\\.)*", constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)

func metricsPage(c *code) (string, error) {
	// The series of the default configuration: no custom labels.
	if err := berthmetrics.Configure(configv1alpha1.Metrics{}); err != nil {
		return "", err
	}
	metrics, err := registeredMetrics(ctrlmetrics.Registry.(prometheus.Collector))
	if err != nil {
		return "", err
	}
	if err := definedMetrics(c, metrics); err != nil {
		return "", err
	}
	var b strings.Builder
	var rows [][]string
	var buckets []string
	for _, name := range slices.Sorted(maps.Keys(metrics)) {
		m := metrics[name]
		labels := make([]string, len(m.labels))
		for i, l := range m.labels {
			labels[i] = codeSpan(l)
		}
		rows = append(rows, []string{codeSpan(name), m.typ, strings.Join(labels, ", "), m.help})
		if m.buckets != "" {
			buckets = append(buckets, fmt.Sprintf("- `%s`: `%s`\n", name, m.buckets))
		}
	}
	table(&b, []string{"name", "type", "labels", "help"}, rows)
	if len(buckets) > 0 {
		b.WriteString("The histograms' buckets:\n\n" + strings.Join(buckets, "") + "\n")
	}
	return b.String(), nil
}

// registeredMetrics are Berth's metrics among those a collector
// describes, by name.
func registeredMetrics(coll prometheus.Collector) (map[string]*metric, error) {
	ch := make(chan *prometheus.Desc)
	go func() {
		coll.Describe(ch)
		close(ch)
	}()
	out := map[string]*metric{}
	var errs []error
	for desc := range ch {
		m, err := parseDesc(desc.String())
		switch {
		case err != nil:
			errs = append(errs, err)
		case strings.HasPrefix(m.name, metricPrefix):
			out[m.name] = m
		}
	}
	if len(out) == 0 {
		errs = append(errs, fmt.Errorf("no metric named %s... is registered", metricPrefix))
	}
	return out, errors.Join(errs...)
}

func parseDesc(s string) (*metric, error) {
	match := descString.FindStringSubmatch(s)
	if match == nil {
		return nil, fmt.Errorf("cannot read the metric of %s", s)
	}
	m := &metric{}
	var errName, errHelp error
	m.name, errName = strconv.Unquote(match[1])
	m.help, errHelp = strconv.Unquote(match[2])
	if err := errors.Join(errName, errHelp); err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	if match[3] != "" && strings.HasPrefix(m.name, metricPrefix) {
		return nil, fmt.Errorf("%s has constant labels, which the page does not show", m.name)
	}
	for _, l := range strings.Split(match[4], ",") {
		if l != "" {
			// c(name) is a label whose values are constrained.
			m.labels = append(m.labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
		}
	}
	return m, nil
}

// definedMetrics sets the type and buckets of each registered metric from
// the prometheus options that define it in Berth's code, and fails on one
// that is registered and not defined there, or defined and not
// registered.
func definedMetrics(c *code, metrics map[string]*metric) error {
	var errs []error
	defined := map[string]bool{}
	for _, p := range c.pkgs {
		for _, file := range p.files {
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				typ, ok := optsType(p.info.Types[lit].Type)
				if !ok {
					return true
				}
				name, buckets := optsFields(p, lit)
				if !strings.HasPrefix(name, metricPrefix) {
					return true
				}
				defined[name] = true
				if m := metrics[name]; m != nil {
					m.typ, m.buckets = typ, buckets
				} else {
					errs = append(errs, fmt.Errorf("%s: %s is not registered by pkg/metrics, where Berth's metrics are", c.pos(lit.Pos()), name))
				}
				return true
			})
		}
	}
	for name := range metrics {
		if !defined[name] {
			errs = append(errs, fmt.Errorf("%s is registered, and no prometheus options in Berth's code name it", name))
		}
	}
	return errors.Join(errs...)
}

// optsType is the metric type of prometheus options: counter for
// CounterOpts.
func optsType(t types.Type) (string, bool) {
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != "github.com/prometheus/client_golang/prometheus" {
		return "", false
	}
	typ, ok := strings.CutSuffix(named.Obj().Name(), "Opts")
	return strings.ToLower(typ), ok && typ != ""
}

// optsFields are the full name of the metric that options define and the
// code of its buckets.
func optsFields(p *pkg, lit *ast.CompositeLit) (name, buckets string) {
	parts := map[string]string{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key := types.ExprString(kv.Key)
		if v := p.info.Types[kv.Value].Value; v != nil && v.Kind() == constant.String {
			parts[key] = constant.StringVal(v)
		}
		if key == "Buckets" {
			buckets = types.ExprString(kv.Value)
		}
	}
	return prometheus.BuildFQName(parts["Namespace"], parts["Subsystem"], parts["Name"]), buckets
}
