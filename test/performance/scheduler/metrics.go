package scheduler

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
)

// writeMethods are the HTTP methods of API writes.
var writeMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// ParseWrites sums client-go's rest_client_requests_total of a
// Prometheus text exposition by method, for the write methods.
func ParseWrites(r io.Reader) (map[string]int64, error) {
	return sumBy(r, "rest_client_requests_total", "method", func(m string) bool { return writeMethods[m] })
}

// ParsePreemptions sums berth_preempted_workloads_total by reason.
func ParsePreemptions(r io.Reader) (map[string]int64, error) {
	return sumBy(r, "berth_preempted_workloads_total", "reason", func(string) bool { return true })
}

// ParseAdmissions sums berth_admitted_workloads_total over ClusterQueues.
func ParseAdmissions(r io.Reader) (int64, error) {
	var n int64
	err := EachSample(r, func(name, _ string, v float64) {
		if name == "berth_admitted_workloads_total" {
			n += int64(v)
		}
	})
	return n, err
}

// sumBy sums the counter metric of a Prometheus text exposition by the
// value of label, for the values keep accepts.
func sumBy(r io.Reader, metric, labelName string, keep func(string) bool) (map[string]int64, error) {
	out := map[string]int64{}
	err := EachSample(r, func(name, labels string, v float64) {
		if key := Label(labels, labelName); name == metric && keep(key) {
			out[key] += int64(v)
		}
	})
	return out, err
}

// EachSample calls fn with each labelled sample of a Prometheus text
// exposition: its metric's name, its labels and its value.
func EachSample(r io.Reader, fn func(name, labels string, value float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return fmt.Errorf("unexpected metric line %q", line)
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return fmt.Errorf("unexpected metric line %q: %w", line, err)
		}
		fn(name, labels, v)
	}
	return sc.Err()
}

// ParseWatchesStarted sums berth_watches_started_total by resource.
func ParseWatchesStarted(r io.Reader) (map[string]int64, error) {
	return sumBy(r, "berth_watches_started_total", "resource", func(string) bool { return true })
}

// ParseAPIServer reads the API server's counts of Workload watches it
// closed for falling behind (terminatedWatchers), of Workload writes it
// refused as conflicts (conflicts) and of those it stored (writes, and
// by request under writesPrefix) from its Prometheus text exposition.
func ParseAPIServer(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	err := EachSample(r, func(name, labels string, v float64) {
		if Label(labels, "group") != "berth.dev" || Label(labels, "resource") != "workloads" {
			return
		}
		switch {
		case name == "apiserver_terminated_watchers_total":
			out["terminatedWatchers"] += int64(v)
		case name == "apiserver_request_total" && Label(labels, "code") == "409":
			out["conflicts"] += int64(v)
		case name == "apiserver_request_total" && strings.HasPrefix(Label(labels, "code"), "2") && isWrite(Label(labels, "verb")):
			out["writes"] += int64(v)
			out[writesPrefix+requestName(Label(labels, "verb"), Label(labels, "subresource"))] += int64(v)
		}
	})
	return out, err
}

// writesPrefix marks ParseAPIServer's counts of stored writes by request.
const writesPrefix = "writes:"

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

// Label returns the value of name in a Prometheus label list such as
// code="200",method="GET"; label values here never hold quotes.
func Label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(kv, name+"=\""); ok {
			return strings.TrimSuffix(v, "\"")
		}
	}
	return ""
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

// subtract is after - before, per key, and the sum of the differences.
func subtract(after, before map[string]int64) (map[string]int64, int64) {
	out := map[string]int64{}
	var total int64
	for m, v := range after {
		if d := v - before[m]; d != 0 {
			out[m] = d
			total += d
		}
	}
	return out, total
}

// add returns the sum of a and b by key, leaving both unchanged.
func add(a, b map[string]int64) map[string]int64 {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]int64{}
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
