package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkElasticJobs measures what elasticity costs, in one run on the
// local cluster. "jobs" and "elastic-jobs" create the same one-pod Jobs
// (500, or BERTH_BENCH_OBJECTS), the second with berth.dev/elastic: "true",
// and wait until every pod exists and may be scheduled: an elastic Job's
// pod is made gated and Berth lets it run, one more write per pod.
// "grow-by-slices" raises one elastic Job's parallelism 50 times by one pod,
// each time waiting until the new pod may be scheduled: a slice queued,
// admitted, taken into the Job's Workload and deleted, and the pod let run.
//
//	make local-up && go test -run '^$' -bench ElasticJobs -benchtime 1x ./test/e2e/
func BenchmarkElasticJobs(b *testing.B) {
	n := benchObjects(500)
	for _, kind := range []string{"jobs", "elastic-jobs"} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				runMany(b, kind == "elastic-jobs", n)
			}
		})
	}
	b.Run("grow-by-slices", func(b *testing.B) {
		for range b.N {
			growBySlices(b, 50)
		}
	})
}

// benchQueue makes e's queue main with room for every benchmark pod.
func (e *env) benchQueue() {
	e.localQueue("main", e.queue("bench", "", gpuQuota{flavor: e.flavor("h100"), gpus: "0"}))
}

// elasticJob is benchJob's Job, elastic when elastic is true, of
// parallelism pods and ample completions.
func elasticJob(ns, name string, elastic bool, parallelism int) string {
	annotations := ""
	if elastic {
		annotations = `, annotations: {berth.dev/elastic: "true"}`
	}
	return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: %s, namespace: %s, labels: {berth.dev/queue-name: main}%s}\nspec:\n  parallelism: %d\n  completions: 1000\n  template:\n    spec:\n      %s\n",
		name, ns, annotations, parallelism, benchSpec("      "))
}

// podsLetRun counts the pods of e's namespace that carry no scheduling gate.
func (e *env) podsLetRun(ctx context.Context) int {
	out := get(ctx, "pods", "-n", e.ns, "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.schedulingGates[*].name}{"\n"}{end}`)
	n := 0
	for _, line := range strings.Fields(out) {
		if strings.HasSuffix(line, "=") {
			n++
		}
	}
	return n
}

func runMany(b *testing.B, elastic bool, n int) {
	e := newEnv(b)
	e.benchQueue()
	var objects strings.Builder
	for i := range n {
		objects.WriteString(elasticJob(e.ns, fmt.Sprintf("j%d", i), elastic, 1))
		objects.WriteString("---\n")
	}
	measureWork(b, func() error {
		_, err := kubectl(b.Context(), objects.String(), "create", "-f", "-")
		return err
	}, func(ctx context.Context) error {
		if got := e.podsLetRun(ctx); got < n {
			return fmt.Errorf("%d of %d pods let run", got, n)
		}
		return nil
	}, n, "pod")
}

func growBySlices(b *testing.B, steps int) {
	e := newEnv(b)
	e.benchQueue()
	apply(b, elasticJob(e.ns, "grow", true, 1))
	eventually(b, "the elastic Job's first pod let run", 2*time.Minute, func(ctx context.Context) error {
		if got := e.podsLetRun(ctx); got < 1 {
			return fmt.Errorf("%d pods let run", got)
		}
		return nil
	})
	step := 1
	measureWork(b, func() error { return nil }, func(ctx context.Context) error {
		for step <= steps {
			if got := e.podsLetRun(ctx); got < step {
				return fmt.Errorf("%d of %d pods let run", got, step)
			}
			step++
			if _, err := kubectl(ctx, "", "patch", "job", "grow", "-n", e.ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"parallelism":%d}}`, step)); err != nil {
				return err
			}
		}
		if got := e.podsLetRun(ctx); got < steps+1 {
			return fmt.Errorf("%d of %d pods let run", got, steps+1)
		}
		return nil
	}, steps, "slice")
}

// measureWork runs start, then polls done, and reports per unit (n of them)
// the wall time and the controller's work.
func measureWork(b *testing.B, start func() error, done func(context.Context) error, n int, unit string) {
	before := startWork(b)
	b.ResetTimer()
	t0 := time.Now()
	if err := start(); err != nil {
		b.Fatal(err)
	}
	eventually(b, fmt.Sprintf("%d %ss", n, unit), 10*time.Minute, done)
	elapsed := time.Since(t0)
	b.StopTimer()
	before.since(b).report(b, n, unit)
	b.ReportMetric(float64(n)/elapsed.Seconds(), unit+"s/s")
}
