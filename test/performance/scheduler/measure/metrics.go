package measure

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// ControllerCounts are the running totals of the controller's metrics
// that a run reads before and after the scenario.
type ControllerCounts struct {
	// Writes are client-go's rest_client_requests_total for the write
	// methods (POST, PUT, PATCH, DELETE), by method.
	Writes map[string]int64
	// WatchesStarted is berth_watches_started_total, by resource.
	WatchesStarted map[string]int64
	// Preemptions is berth_preempted_workloads_total, by reason.
	Preemptions map[string]int64
	// Admissions is berth_admitted_workloads_total over ClusterQueues.
	Admissions int64
	// Reconciles is controller-runtime's reconcile_total, by controller.
	Reconciles map[string]int64
	// WebhookCalls is controller-runtime's webhook_requests_total, by
	// webhook path.
	WebhookCalls map[string]int64
}

// Total is the sum of by's values.
func Total(by map[string]int64) int64 {
	var n int64
	for _, v := range by {
		n += v
	}
	return n
}

// ScrapeController reads the controller's metrics from url, its metrics
// endpoint.
func ScrapeController(ctx context.Context, url string) (ControllerCounts, error) {
	return get(ctx, http.DefaultClient, url, parseController)
}

// writeMethods are the HTTP methods of API writes.
var writeMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// parseController reads ControllerCounts from a Prometheus text
// exposition.
func parseController(r io.Reader) (ControllerCounts, error) {
	fams, err := parseText(r)
	if err != nil {
		return ControllerCounts{}, err
	}
	all := func(string) bool { return true }
	return ControllerCounts{
		Writes:         sumBy(fams["rest_client_requests_total"], "method", func(m string) bool { return writeMethods[m] }),
		WatchesStarted: sumBy(fams["berth_watches_started_total"], "resource", all),
		Preemptions:    sumBy(fams["berth_preempted_workloads_total"], "reason", all),
		Admissions:     sum(fams["berth_admitted_workloads_total"].GetMetric()),
		Reconciles:     sumBy(fams["controller_runtime_reconcile_total"], "controller", all),
		WebhookCalls:   sumBy(fams["controller_runtime_webhook_requests_total"], "webhook", all),
	}, nil
}

// APIServerCounts are the API server's running totals for Workloads (group
// berth.dev) that a run reads before and after the scenario.
type APIServerCounts struct {
	// TerminatedWatchers counts the Workload watches it closed because
	// their client fell behind.
	TerminatedWatchers int64
	// Conflicts counts the Workload requests it refused with 409.
	Conflicts int64
	// Writes counts the Workload writes (POST, PUT, PATCH) it stored.
	Writes int64
	// WritesByRequest splits Writes by verb and subresource: "POST",
	// "PUT status".
	WritesByRequest map[string]int64
}

// ReadAPIServer reads the API server's metrics through cs.
func ReadAPIServer(ctx context.Context, cs kubernetes.Interface) (APIServerCounts, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return APIServerCounts{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	defer func() { _ = body.Close() }()
	return parseAPIServer(body)
}

// parseAPIServer reads APIServerCounts from the API server's Prometheus
// text exposition.
func parseAPIServer(r io.Reader) (APIServerCounts, error) {
	fams, err := parseText(r)
	if err != nil {
		return APIServerCounts{}, err
	}
	out := APIServerCounts{WritesByRequest: map[string]int64{}}
	out.TerminatedWatchers = sum(workloadSeries(fams["apiserver_terminated_watchers_total"]))
	for _, m := range workloadSeries(fams["apiserver_request_total"]) {
		code, verb := label(m, "code"), label(m, "verb")
		switch {
		case code == "409":
			out.Conflicts += int64(value(m))
		case strings.HasPrefix(code, "2") && isWrite(verb):
			out.Writes += int64(value(m))
			out.WritesByRequest[requestName(verb, label(m, "subresource"))] += int64(value(m))
		}
	}
	return out, nil
}

// workloadSeries are the series of fam about Workloads: other resources
// named workloads may exist in other groups.
func workloadSeries(fam *dto.MetricFamily) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range fam.GetMetric() {
		if label(m, "group") == "berth.dev" && label(m, "resource") == "workloads" {
			out = append(out, m)
		}
	}
	return out
}

// requestName names a request by its verb and subresource: "PUT status".
func requestName(verb, subresource string) string {
	if subresource == "" {
		return verb
	}
	return verb + " " + subresource
}

func isWrite(verb string) bool {
	return verb == "POST" || verb == "PUT" || verb == "PATCH"
}

// parseText parses a Prometheus text exposition into its metric families,
// by name.
func parseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	// The UTF-8 scheme accepts every name the legacy one does; the
	// harness looks names up, it does not check them.
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

// sum is the sum of the values of series.
func sum(series []*dto.Metric) int64 {
	var n int64
	for _, m := range series {
		n += int64(value(m))
	}
	return n
}

// sumBy sums the series of fam by the value of labelName, for the values
// keep accepts.
func sumBy(fam *dto.MetricFamily, labelName string, keep func(string) bool) map[string]int64 {
	out := map[string]int64{}
	for _, m := range fam.GetMetric() {
		if key := label(m, labelName); keep(key) {
			out[key] += int64(value(m))
		}
	}
	return out
}

// label is the value of m's label name, "" if it has none.
func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// value is the value of a counter, gauge or untyped series: the client
// libraries type theirs, but a line without a TYPE comment is untyped.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// get reads url with c and parses the body of a 200 answer with parse;
// another answer is an error that quotes the start of its body.
func get[T any](ctx context.Context, c *http.Client, url string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return zero, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return zero, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return zero, fmt.Errorf("GET %s: %s: %s", url, resp.Status, msg)
	}
	return parse(resp.Body)
}
