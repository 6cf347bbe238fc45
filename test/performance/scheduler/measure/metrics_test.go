package measure

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestParseWrites(t *testing.T) {
	cases := map[string]struct {
		text string
		want map[string]int64
	}{
		"writes summed by method, reads and other metrics left out": {
			text: `# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 40
rest_client_requests_total{code="200",host="127.0.0.1:1",method="PATCH"} 120
rest_client_requests_total{code="409",host="127.0.0.1:1",method="PATCH"} 3
rest_client_requests_total{code="201",host="127.0.0.1:1",method="POST"} 2
rest_client_requests_total{code="200",host="127.0.0.1:1",method="PUT"} 7
rest_client_request_duration_seconds_count{host="127.0.0.1:1",verb="PATCH"} 99
`,
			want: map[string]int64{"PATCH": 123, "POST": 2, "PUT": 7},
		},
		"no client metrics": {text: "up 1\n", want: map[string]int64{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseController(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Writes); diff != "" {
				t.Errorf("parseController() writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePreemptions(t *testing.T) {
	text := `# TYPE berth_preempted_workloads_total counter
berth_preempted_workloads_total{cluster_queue="a",reason="InClusterQueue"} 3
berth_preempted_workloads_total{cluster_queue="b",reason="InClusterQueue"} 2
berth_preempted_workloads_total{cluster_queue="b",reason="InCohortReclamation"} 5
berth_admitted_workloads_total{cluster_queue="a"} 9
`
	got, err := parseController(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"InClusterQueue": 5, "InCohortReclamation": 5}, got.Preemptions); diff != "" {
		t.Errorf("preemptions (-want +got):\n%s", diff)
	}
}

func TestParseAdmissions(t *testing.T) {
	text := `# TYPE berth_admitted_workloads_total counter
berth_admitted_workloads_total{cluster_queue="a"} 9
berth_admitted_workloads_total{cluster_queue="b"} 4
berth_preempted_workloads_total{cluster_queue="b",reason="InClusterQueue"} 2
`
	got, err := parseController(strings.NewReader(text))
	if err != nil || got.Admissions != 13 {
		t.Errorf("parseController() admissions = %d, %v; want 13", got.Admissions, err)
	}
}

func TestParseAPIServer(t *testing.T) {
	text := `# TYPE apiserver_terminated_watchers_total counter
apiserver_terminated_watchers_total{group="berth.dev",resource="workloads"} 17
apiserver_terminated_watchers_total{group="",resource="configmaps"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="berth.dev",resource="workloads",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 900
apiserver_request_total{code="409",component="apiserver",dry_run="",group="berth.dev",resource="workloads",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 6
apiserver_request_total{code="409",component="apiserver",dry_run="",group="berth.dev",resource="workloads",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} 1
apiserver_request_total{code="409",component="apiserver",dry_run="",group="berth.dev",resource="clusterqueues",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 8
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PUT",version="v1"} 5
apiserver_request_total{code="201",component="apiserver",dry_run="",group="berth.dev",resource="workloads",scope="resource",subresource="",verb="POST",version="v1alpha1"} 300
apiserver_request_total{code="200",component="apiserver",dry_run="",group="berth.dev",resource="workloads",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="berth.dev",resource="clusterqueues",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 70
apiserver_request_duration_seconds_count{group="berth.dev",resource="workloads",verb="PUT"} 906
`
	got, err := parseAPIServer(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := APIServerCounts{TerminatedWatchers: 17, Conflicts: 7, Writes: 1200, WritesByRequest: map[string]int64{"PUT status": 900, "POST": 300}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("API server counts (-want +got):\n%s", diff)
	}
}

func TestParseWatchesStarted(t *testing.T) {
	text := `# TYPE berth_watches_started_total counter
berth_watches_started_total{resource="workloads"} 4
berth_watches_started_total{resource="clusterqueues"} 1
berth_admitted_workloads_total{cluster_queue="a"} 9
`
	got, err := parseController(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"workloads": 4, "clusterqueues": 1}, got.WatchesStarted); diff != "" {
		t.Errorf("watches started (-want +got):\n%s", diff)
	}
}

// TestScrapeController reads the counts from an exposition that
// client_golang wrote, as the controller's metrics endpoint serves it:
// HELP and TYPE lines, labels in its order, series of other metrics.
func TestScrapeController(t *testing.T) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total", Help: "Requests."}, []string{"code", "host", "method"})
	watches := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_watches_started_total", Help: "Watches."}, []string{"resource"})
	preempted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_preempted_workloads_total", Help: "Preemptions."}, []string{"cluster_queue", "reason"})
	admitted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_admitted_workloads_total", Help: "Admissions."}, []string{"cluster_queue"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds", Help: "Latency."}, []string{"verb"})
	reconciles := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total", Help: "Reconciles."}, []string{"controller", "result"})
	webhooks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_webhook_requests_total", Help: "Webhook calls."}, []string{"code", "webhook"})
	reg.MustRegister(requests, watches, preempted, admitted, latency, reconciles, webhooks)
	reconciles.WithLabelValues("-Pod", "success").Add(7)
	reconciles.WithLabelValues("-Pod", "error").Add(1)
	reconciles.WithLabelValues("workload", "success").Add(5)
	webhooks.WithLabelValues("200", "/validate--v1-pod").Add(2)
	webhooks.WithLabelValues("500", "/validate--v1-pod").Add(1)
	requests.WithLabelValues("200", "127.0.0.1:6443", "PUT").Add(30)
	requests.WithLabelValues("409", "127.0.0.1:6443", "PUT").Add(2)
	requests.WithLabelValues("200", "127.0.0.1:6443", "GET").Add(50)
	requests.WithLabelValues("201", "127.0.0.1:6443", "POST").Add(1)
	watches.WithLabelValues("workloads").Add(3)
	preempted.WithLabelValues("a", "InClusterQueue").Add(4)
	preempted.WithLabelValues("b", "InClusterQueue").Add(1)
	admitted.WithLabelValues("a").Add(20)
	admitted.WithLabelValues("b").Add(12)
	latency.WithLabelValues("PUT").Observe(0.01)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	got, err := ScrapeController(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := ControllerCounts{
		Writes:         map[string]int64{"PUT": 32, "POST": 1},
		WatchesStarted: map[string]int64{"workloads": 3},
		Preemptions:    map[string]int64{"InClusterQueue": 5},
		Admissions:     32,
		Reconciles:     map[string]int64{"-Pod": 8, "workload": 5},
		WebhookCalls:   map[string]int64{"/validate--v1-pod": 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScrapeController() (-want +got):\n%s", diff)
	}
}

func TestScrapeControllerRefusesWhatIsNotAnExposition(t *testing.T) {
	cases := map[string]struct {
		handler http.HandlerFunc
		wantErr string
	}{
		"a broken line": {
			handler: func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, "berth_admitted_workloads_total{cluster_queue=\"a\" 3\n")
			},
			wantErr: "parsing metrics",
		},
		"an error answer": {
			handler: func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
			},
			wantErr: "503 Service Unavailable: not ready",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			if _, err := ScrapeController(context.Background(), srv.URL); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ScrapeController() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
