package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFairSharingSplitsACohortByWeight restarts the controller with fair
// sharing on. Three ClusterQueues of weights 1, 1 and 2, with no GPUs of
// their own, share the 16 GPUs of their cohort; each keeps far more short
// jobs queued than it can run. Counted from the pods that run on the
// nodes, each queue's part of the GPU-seconds, once the cohort is full,
// is within a tenth of 25%, 25% and 50%.
func TestFairSharingSplitsACohortByWeight(t *testing.T) {
	restartControllerWith(t, "fairSharing: {enable: true}\n")
	e := newEnv(t)
	e.sampleGPUs(16)
	h100 := e.flavor("h100")
	cohort := e.name("fair")
	e.clusterScoped("cohort", cohort, fmt.Sprintf(`apiVersion: berth.dev/v1alpha1
kind: Cohort
metadata: {name: %s}
spec:
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: %s
      resources:
      - {name: cpu, nominalQuota: "1000"}
      - {name: nvidia.com/gpu, nominalQuota: "16"}
`, cohort, h100))
	weights := map[string]string{"a": "1", "b": "1", "c": "2"}
	var jobs strings.Builder
	for _, q := range []string{"a", "b", "c"} {
		spec := fmt.Sprintf("  cohortName: %s\n  fairSharing: {weight: %s}\n  preemption: {reclaimWithinCohort: Any}\n", cohort, weights[q])
		e.localQueue(q, e.queue(q, spec, gpuQuota{flavor: h100, gpus: "0"}))
		for i := range 80 {
			jobs.WriteString(jobManifest(e.ns, fmt.Sprintf("%s-%d", q, i), q, "", 1, 1, "10s") + "---\n")
		}
	}
	if _, err := kubectl(t.Context(), jobs.String(), "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}

	// The cohort fills in the first seconds; count from then on.
	time.Sleep(20 * time.Second)
	held := map[string]float64{}
	samples := 0
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		out, err := kubectl(t.Context(), "", "get", "pods", "-n", e.ns, "-o",
			`jsonpath={range .items[*]}{.metadata.labels.batch\.kubernetes\.io/job-name} {.spec.nodeName} {.status.phase}{"\n"}{end}`)
		if err != nil {
			continue
		}
		samples++
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[2] == "Running" {
				held[strings.SplitN(f[0], "-", 2)[0]]++
			}
		}
	}
	total := held["a"] + held["b"] + held["c"]
	if total == 0 {
		t.Fatalf("no pod ran over %d samples", samples)
	}
	preemptions := get(t.Context(), "events", "-n", e.ns, "--field-selector", "reason=Preempted,involvedObject.kind=Workload", "-o", "jsonpath={range .items[*]}{.count} {end}")
	n := 0
	for _, c := range strings.Fields(preemptions) {
		v, _ := strconv.Atoi(c)
		n += max(v, 1)
	}
	for q, want := range map[string]float64{"a": 0.25, "b": 0.25, "c": 0.5} {
		got := held[q] / total
		t.Logf("queue %s (weight %s): %.1f%% of the GPU-seconds, want %.0f%%", q, weights[q], 100*got, 100*want)
		if math.Abs(got-want) > 0.1*want {
			t.Errorf("queue %s held %.1f%% of the GPU-seconds, want %.0f%% within a tenth", q, 100*got, 100*want)
		}
	}
	t.Logf("%d samples of %.0f GPUs held on average; %d preemptions", samples, total/float64(samples), n)
}
