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

	"github.com/berth-dev/berth/test/performance/scheduler/measure"
)

// BenchmarkAdmitPodsBesideJobs queues the same number of single pods, of
// pods in groups of four, of one-pod Jobs, of RayJobs of a head and one
// worker and of TrainJobs of two nodes (1,000, or BERTH_BENCH_OBJECTS) in
// one ClusterQueue of the local cluster with room for all of them, and
// reports for each how fast they are admitted and what the controller
// spends per admission and per pod. KubeRay's operator and Trainer's
// controller run the admitted RayJobs and TrainJobs meanwhile, as they
// would in a cluster:
//
//	make local-up && go test -run '^$' -bench AdmitPodsBesideJobs -benchtime 1x ./test/e2e/
//
// The clock runs from the first create to the last Admitted condition, and
// the objects are created by one kubectl, as a user would.
func BenchmarkAdmitPodsBesideJobs(b *testing.B) {
	n := benchObjects(1000)
	for _, kind := range []string{"pods", "pod-groups", "jobs", "rayjobs", "trainjobs"} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				admitMany(b, kind, n)
			}
		})
	}
}

// benchGroupSize is the number of pods in a group of the benchmark.
const benchGroupSize = 4

// admitMany creates n objects of kind in a new namespace and waits until
// their Workloads are admitted: n, or n/4 for pods in groups of four.
func admitMany(b *testing.B, kind string, n int) {
	e := newEnv(b)
	h100 := e.flavor("h100")
	e.localQueue("main", e.queue("bench", "", gpuQuota{flavor: h100, gpus: "0"}))
	var objects strings.Builder
	workloads, pods := n, n
	runtime := ""
	if kind == "trainjobs" {
		runtime = e.benchRuntime()
	}
	for i := range n {
		switch kind {
		case "pods":
			objects.WriteString(benchPod(e.ns, fmt.Sprintf("p%d", i), ""))
		case "pod-groups":
			objects.WriteString(benchPod(e.ns, fmt.Sprintf("p%d", i), fmt.Sprintf("g%d", i/benchGroupSize)))
			workloads = n / benchGroupSize
		case "rayjobs":
			objects.WriteString(benchRayJob(e.ns, fmt.Sprintf("r%d", i)))
			pods = 2 * n
		case "trainjobs":
			fmt.Fprintf(&objects, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t%d, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n  runtimeRef: {name: %s}\n  trainer: {numNodes: 2}\n",
				i, e.ns, runtime)
			pods = 2 * n
		default:
			objects.WriteString(benchJob(e.ns, fmt.Sprintf("j%d", i)))
		}
		objects.WriteString("---\n")
	}
	before := startWork(b)
	b.ResetTimer()
	start := time.Now()
	if _, err := kubectl(b.Context(), objects.String(), "create", "-f", "-"); err != nil {
		b.Fatal(err)
	}
	created := time.Since(start)
	eventually(b, fmt.Sprintf("%d workloads admitted", workloads), 10*time.Minute, func(ctx context.Context) error {
		out := get(ctx, "wl", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Admitted")].status} {end}`)
		if got := strings.Count(out, "True"); got < workloads {
			return fmt.Errorf("%d of %d admitted", got, workloads)
		}
		return nil
	})
	elapsed := time.Since(start)
	b.StopTimer()
	done := before.since(b)
	b.ReportMetric(float64(workloads)/elapsed.Seconds(), "admissions/s")
	b.ReportMetric(float64(pods)/elapsed.Seconds(), "pods/s")
	b.ReportMetric(created.Seconds(), "s-to-create")
	b.ReportMetric(1000*done.cpu/float64(workloads), "controller-cpu-ms/admission")
	done.report(b, pods, "pod")
}

// benchObjects is the number of objects a benchmark creates:
// BERTH_BENCH_OBJECTS, or def.
func benchObjects(def int) int {
	if v, err := strconv.Atoi(os.Getenv("BERTH_BENCH_OBJECTS")); err == nil && v > 0 {
		return v
	}
	return def
}

// controllerMetrics is where the local cluster's controller serves its
// metrics (config/local/berth.yaml).
const controllerMetrics = "http://127.0.0.1:18080/metrics"

// controllerWork is what the local cluster's controller has done: its CPU
// time, and its reconciles, webhook calls and API writes.
type controllerWork struct {
	proc   procfs.Proc
	cpu    float64
	counts measure.ControllerCounts
}

// startWork reads what the controller has done so far.
func startWork(b *testing.B) controllerWork {
	proc, err := procfs.NewProc(controllerPID(b))
	if err != nil {
		b.Fatal(err)
	}
	return readWork(b, proc)
}

func readWork(b *testing.B, proc procfs.Proc) controllerWork {
	st, err := proc.Stat()
	if err != nil {
		b.Fatal(err)
	}
	counts, err := measure.ScrapeController(b.Context(), controllerMetrics)
	if err != nil {
		b.Fatal(err)
	}
	return controllerWork{proc: proc, cpu: st.CPUTime(), counts: counts}
}

// since is what the controller has done since w.
func (w controllerWork) since(b *testing.B) controllerWork {
	now := readWork(b, w.proc)
	return controllerWork{
		cpu: now.cpu - w.cpu,
		counts: measure.ControllerCounts{
			Reconciles:   map[string]int64{"": measure.Total(now.counts.Reconciles) - measure.Total(w.counts.Reconciles)},
			WebhookCalls: map[string]int64{"": measure.Total(now.counts.WebhookCalls) - measure.Total(w.counts.WebhookCalls)},
			Writes:       map[string]int64{"": measure.Total(now.counts.Writes) - measure.Total(w.counts.Writes)},
		},
	}
}

// report reports the controller's work per unit, n of them: its CPU, its
// reconciles, its webhook calls and its API writes.
func (w controllerWork) report(b *testing.B, n int, unit string) {
	per := func(v float64) float64 { return v / float64(n) }
	b.ReportMetric(1000*per(w.cpu), "controller-cpu-ms/"+unit)
	b.ReportMetric(per(float64(measure.Total(w.counts.Reconciles))), "reconciles/"+unit)
	b.ReportMetric(per(float64(measure.Total(w.counts.WebhookCalls))), "webhook-calls/"+unit)
	b.ReportMetric(per(float64(measure.Total(w.counts.Writes))), "writes/"+unit)
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

// benchPod is a pod in queue main, in the group of four of that name
// unless it is empty.
func benchPod(ns, name, group string) string {
	meta := "labels: {berth.dev/queue-name: main}"
	if group != "" {
		meta = fmt.Sprintf("labels: {berth.dev/queue-name: main, berth.dev/pod-group-name: %s}, annotations: {berth.dev/pod-group-total-count: \"%d\"}", group, benchGroupSize)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s, %s}\nspec:\n  %s\n", name, ns, meta, benchSpec("  "))
}

// benchJob is a Job of one pod like benchPod's.
func benchJob(ns, name string) string {
	return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}}\nspec:\n  template:\n    spec:\n      %s\n", name, ns, benchSpec("      "))
}

// benchRayJob is a RayJob of a head and one worker like benchPod, whose
// Ray job KubeRay submits over HTTP (no submitter pod).
func benchRayJob(ns, name string) string {
	return fmt.Sprintf(`apiVersion: ray.io/v1
kind: RayJob
metadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}}
spec:
  entrypoint: python bench.py
  submissionMode: HTTPMode
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          %s
    workerGroupSpecs:
    - groupName: w
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          %s
`, name, ns, benchSpec("          "), benchSpec("          "))
}

// benchRuntime creates a ClusterTrainingRuntime whose trainer step's pods
// are benchPod's, and returns its name.
func (e *env) benchRuntime() string {
	name := e.name("bench")
	e.clusterScoped("clustertrainingruntime", name, fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: %s}
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              spec:
                %s
`, name, strings.Replace(benchSpec("                "), "name: main", "name: node", 1)))
	return name
}
