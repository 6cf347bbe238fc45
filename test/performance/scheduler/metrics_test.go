package scheduler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
			got, err := ParseWrites(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseWrites() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProc(t *testing.T) {
	stat := "4242 (berth (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 2000000 3000 0\n"
	status := "Name:\tberth\nVmPeak:\t  900 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n"
	got, err := parseProc([]byte(stat), []byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Process{CPUSeconds: 3.25, MaxRSSBytes: 2 << 20}, got); diff != "" {
		t.Errorf("parseProc() (-want +got):\n%s", diff)
	}
}

func TestParsePreemptions(t *testing.T) {
	text := `# TYPE berth_preempted_workloads_total counter
berth_preempted_workloads_total{cluster_queue="a",reason="InClusterQueue"} 3
berth_preempted_workloads_total{cluster_queue="b",reason="InClusterQueue"} 2
berth_preempted_workloads_total{cluster_queue="b",reason="InCohortReclamation"} 5
berth_admitted_workloads_total{cluster_queue="a"} 9
`
	got, err := ParsePreemptions(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"InClusterQueue": 5, "InCohortReclamation": 5}, got); diff != "" {
		t.Errorf("preemptions (-want +got):\n%s", diff)
	}
}

func TestParseAdmissions(t *testing.T) {
	text := `# TYPE berth_admitted_workloads_total counter
berth_admitted_workloads_total{cluster_queue="a"} 9
berth_admitted_workloads_total{cluster_queue="b"} 4
berth_preempted_workloads_total{cluster_queue="b",reason="InClusterQueue"} 2
`
	got, err := ParseAdmissions(strings.NewReader(text))
	if err != nil || got != 13 {
		t.Errorf("ParseAdmissions() = %d, %v; want 13", got, err)
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
	got, err := ParseAPIServer(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"terminatedWatchers": 17, "conflicts": 7, "writes": 1200, "writes:PUT status": 900, "writes:POST": 300}, got); diff != "" {
		t.Errorf("API server counts (-want +got):\n%s", diff)
	}
}

func TestParseWatchesStarted(t *testing.T) {
	text := `# TYPE berth_watches_started_total counter
berth_watches_started_total{resource="workloads"} 4
berth_watches_started_total{resource="clusterqueues"} 1
berth_admitted_workloads_total{cluster_queue="a"} 9
`
	got, err := ParseWatchesStarted(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"workloads": 4, "clusterqueues": 1}, got); diff != "" {
		t.Errorf("watches started (-want +got):\n%s", diff)
	}
}

// TestKilledControllersAddUp: a run's controller figures are the first
// process's since the start, plus each restarted one's from its own start.
func TestKilledControllersAddUp(t *testing.T) {
	k := killedControllers{
		restarts:       2,
		writes:         map[string]int64{"PUT": 700, "POST": 10},
		watchesStarted: map[string]int64{"workloads": 2},
		process:        Process{CPUSeconds: 4.5, MaxRSSBytes: 300},
	}
	last := measured{
		writes:         writeCounts{byVerb: map[string]int64{"PUT": 300, "PATCH": 5}, total: 305},
		watchesStarted: map[string]int64{"workloads": 1, "clusterqueues": 1},
		procs:          map[string]Process{"berth": {CPUSeconds: 2.25, MaxRSSBytes: 200}, "etcd": {CPUSeconds: 1}},
	}
	got := last.withKilled(k)
	want := measured{
		writes:         writeCounts{byVerb: map[string]int64{"PUT": 1000, "POST": 10, "PATCH": 5}, total: 1015},
		watchesStarted: map[string]int64{"workloads": 3, "clusterqueues": 1},
		procs:          map[string]Process{"berth": {CPUSeconds: 6.75, MaxRSSBytes: 300}, "etcd": {CPUSeconds: 1}},
		killed:         k,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(measured{}, writeCounts{}, killedControllers{})); diff != "" {
		t.Errorf("withKilled (-want +got):\n%s", diff)
	}
	// A process that exited on its own adds up as one the run killed.
	exited := k
	exited.restarts, exited.exits = 0, 1
	if got := last.withKilled(exited); got.writes.total != 1015 || got.procs["berth"].CPUSeconds != 6.75 {
		t.Errorf("after an exit: %d writes, %v CPU-seconds; want 1015, 6.75", got.writes.total, got.procs["berth"].CPUSeconds)
	}
	if got := last.withKilled(killedControllers{}); got.writes.total != 305 || got.procs["berth"].CPUSeconds != 2.25 {
		t.Errorf("with no restart the figures changed: %+v", got)
	}
}
