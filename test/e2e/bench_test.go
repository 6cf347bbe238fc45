package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// BenchmarkAdmitPodsBesideJobs queues the same number of single pods and of
// one-pod Jobs (1,000, or BERTH_BENCH_OBJECTS) in one ClusterQueue of the
// local cluster with room for all of them, and reports for each how fast
// they are admitted and what the controller spends per admission:
//
//	make local-up && go test -run '^$' -bench AdmitPodsBesideJobs -benchtime 1x ./test/e2e/
//
// The clock runs from the first create to the last Admitted condition, and
// the objects are created by one kubectl, as a user would.
func BenchmarkAdmitPodsBesideJobs(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("BERTH_BENCH_OBJECTS")); err == nil && v > 0 {
		n = v
	}
	for _, kind := range []string{"pods", "jobs"} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				admitMany(b, kind, n)
			}
		})
	}
}

// admitMany creates n objects of kind in a new namespace and waits until
// their n Workloads are admitted.
func admitMany(b *testing.B, kind string, n int) {
	e := newEnv(b)
	h100 := e.flavor("h100")
	e.localQueue("main", e.queue("bench", "", gpuQuota{flavor: h100, gpus: "0"}))
	var objects strings.Builder
	for i := range n {
		if kind == "pods" {
			objects.WriteString(benchPod(e.ns, fmt.Sprintf("p%d", i)))
		} else {
			objects.WriteString(benchJob(e.ns, fmt.Sprintf("j%d", i)))
		}
		objects.WriteString("---\n")
	}
	proc, err := procfs.NewProc(controllerPID(b))
	if err != nil {
		b.Fatal(err)
	}
	before := cpuSeconds(b, proc)
	b.ResetTimer()
	start := time.Now()
	if _, err := kubectl(b.Context(), objects.String(), "create", "-f", "-"); err != nil {
		b.Fatal(err)
	}
	created := time.Since(start)
	eventually(b, fmt.Sprintf("%d workloads admitted", n), 10*time.Minute, func(ctx context.Context) error {
		out := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Admitted")].status} {end}`)
		if got := strings.Count(out, "True"); got < n {
			return fmt.Errorf("%d of %d admitted", got, n)
		}
		return nil
	})
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuSeconds(b, proc) - before
	b.ReportMetric(float64(n)/elapsed.Seconds(), "admissions/s")
	b.ReportMetric(created.Seconds(), "s-to-create")
	b.ReportMetric(1000*cpu/float64(n), "controller-cpu-ms/admission")
}

func cpuSeconds(b *testing.B, proc procfs.Proc) float64 {
	st, err := proc.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return st.CPUTime()
}

// benchSpec is the pod spec of the benchmark's pods: a tenth of a cpu,
// indented for a pod or a Job's template.
func benchSpec(indent string) string {
	return strings.ReplaceAll(`restartPolicy: Never
containers:
- name: main
  image: registry.example/bench:latest
  resources: {requests: {cpu: 100m}}
`, "\n", "\n"+indent)
}

// benchPod is a pod in queue main.
func benchPod(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n  %s\n", name, ns, benchSpec("  "))
}

// benchJob is a Job of one pod like benchPod's.
func benchJob(ns, name string) string {
	return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n  template:\n    spec:\n      %s\n", name, ns, benchSpec("      "))
}
