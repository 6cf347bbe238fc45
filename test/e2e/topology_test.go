package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// gangManifest is a Job of pods pods of 8 GPUs whose pod template carries
// the topology annotation key: level.
func gangManifest(ns, name string, pods int, key, level string) string {
	return gangOf(ns, name, "", pods, fmt.Sprintf("{%s: %s}", key, level), "{}")
}

// gangOf is a Job of pods pods of 8 GPUs in queue main and priority
// class class ("" for none), with the pod template's annotations and node
// selector.
func gangOf(ns, name, class string, pods int, annotations, nodeSelector string) string {
	return jobOf(ns, name, "main", class, pods, 8, annotations, nodeSelector)
}

// TestTopologyKeepsGangsInRacks runs gangs on the local cluster's fabric
// (32 nodes of 8 GPUs: 2 blocks of 4 racks of 4 hosts) with the sample
// Topology and flavor, through berth-scheduler, and reads where they ran
// from the pods on the nodes: a required-rack gang of 4 x 8 GPUs runs in
// one rack; a gang of 6 that prefers a rack runs in two racks of one
// block, each pod on a host its admission names; a gang of 5 that
// requires a rack, which the quota allows but no rack holds, waits and
// says so in numbers; a gang of 8 in slices of 4 that require a rack runs
// in two whole racks of one block.
func TestTopologyKeepsGangsInRacks(t *testing.T) {
	e := newEnv(t)
	e.fabricQueue("fabric", "")
	rackOf := map[string]string{}
	blockOf := map[string]string{}
	for _, n := range strings.Fields(get(t.Context(), "nodes", "-l", "node.berth.dev/pool=fabric", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.cloud\.berth\.dev/block}/{.metadata.labels.cloud\.berth\.dev/rack} {end}`)) {
		name, where, _ := strings.Cut(n, "=")
		block, rack, _ := strings.Cut(where, "/")
		rackOf[name], blockOf[name] = rack, block
	}
	if len(rackOf) != 32 {
		t.Fatalf("the local cluster has %d fabric nodes, want 32: %v", len(rackOf), rackOf)
	}
	// racks waits until the job's pods all run and returns the racks and
	// blocks of their nodes.
	racks := func(job string, pods int) (racks, blocks []string) {
		t.Helper()
		eventually(t, fmt.Sprintf("the %d pods of %s running on the fabric", pods, job), 120*time.Second, func(ctx context.Context) error {
			racks, blocks = nil, nil
			out := get(ctx, "pods", "-n", e.ns, "-l", "job-name="+job, "-o",
				"jsonpath={range .items[*]}{.spec.nodeName}:{.status.phase} {end}")
			if len(strings.Fields(out)) != pods {
				return fmt.Errorf("pods: %s", out)
			}
			for _, p := range strings.Fields(out) {
				node, phase, _ := strings.Cut(p, ":")
				if phase != "Running" || rackOf[node] == "" {
					return fmt.Errorf("pods: %s", out)
				}
				racks, blocks = append(racks, rackOf[node]), append(blocks, blockOf[node])
			}
			slices.Sort(racks)
			slices.Sort(blocks)
			return nil
		})
		return slices.Compact(racks), slices.Compact(blocks)
	}

	apply(t, gangManifest(e.ns, "one-rack", 4, "berth.dev/podset-required-topology", "cloud.berth.dev/rack"))
	if r, _ := racks("one-rack", 4); len(r) != 1 {
		t.Errorf("the required-rack gang runs in racks %v, want one", r)
	}
	sel := get(t.Context(), "job", "one-rack", "-n", e.ns, "-o", "jsonpath={.spec.template.spec.nodeSelector}")
	if !strings.Contains(sel, "cloud.berth.dev/rack") {
		t.Errorf("the running job's node selector is %s, want its rack", sel)
	}

	apply(t, gangManifest(e.ns, "two-racks", 6, "berth.dev/podset-preferred-topology", "cloud.berth.dev/rack"))
	if r, b := racks("two-racks", 6); len(r) != 2 || len(b) != 1 {
		t.Errorf("the gang of 6 that prefers a rack runs in racks %v of blocks %v, want two racks of one block", r, b)
	}
	// The node selector keeps it in its block, and the node affinity
	// Berth adds in its two racks and on its admission's hosts, for any
	// scheduler; berth-scheduler's BerthTopology puts each host's count
	// there.
	affinity := get(t.Context(), "job", "two-racks", "-n", e.ns, "-o",
		"jsonpath={.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[*].key}")
	if affinity != "cloud.berth.dev/rack kubernetes.io/hostname" {
		t.Errorf("the spread job's required node affinity is on %q, want its racks and hosts", affinity)
	}
	if hosts, assigned := e.hostsOf("two-racks"), e.assignedHosts(t.Context(), "two-racks"); !slices.Equal(hosts, assigned) {
		t.Errorf("the gang of 6 runs on hosts %v, want those of its admission, %v", hosts, assigned)
	}

	apply(t, gangManifest(e.ns, "too-wide", 5, "berth.dev/podset-required-topology", "cloud.berth.dev/rack"))
	e.waitPending("too-wide", "needs 5 pods (", "in one cloud.berth.dev/rack: the best,", "has room for 4")

	// kubectl berth why shows where a gang runs; what-if, where another
	// would go, judged on the nodes and the pods on them.
	out, err := berthPlugin(t.Context(), "why", "job/one-rack", "-n", e.ns, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var why struct{ Topology map[string]string }
	if err := json.Unmarshal([]byte(out), &why); err != nil {
		t.Fatal(err)
	}
	oneRack, _ := racks("one-rack", 4)
	if placed := why.Topology["main"]; strings.Count(placed, "/"+oneRack[0]+"/") != 4 {
		t.Errorf("kubectl berth why says the gang is placed %q, want 4 hosts of %s", placed, oneRack[0])
	}
	manifest := filepath.Join(t.TempDir(), "gang.yaml")
	if err := os.WriteFile(manifest, []byte(gangManifest(e.ns, "next", 4, "berth.dev/podset-required-topology", "cloud.berth.dev/rack")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = berthPlugin(t.Context(), "what-if", "-f", manifest, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var verdict struct {
		Admitted bool
		Topology map[string]string
		Message  string
	}
	if err := json.Unmarshal([]byte(out), &verdict); err != nil {
		t.Fatal(err)
	}
	placed := verdict.Topology["main"]
	if !verdict.Admitted || strings.Count(placed, ": 1") != 4 || strings.Contains(placed, "/"+oneRack[0]+"/") {
		t.Errorf("what-if says %+v, want a whole rack other than %s", verdict, oneRack[0])
	}

	// A gang of 8 in one block, in slices of 4 that each require a rack:
	// two whole racks of one block, 4 pods in each.
	apply(t, gangOf(e.ns, "slices", "", 8, `{berth.dev/podset-required-topology: cloud.berth.dev/block, `+
		`berth.dev/podset-slice-required-topology: cloud.berth.dev/rack, berth.dev/podset-slice-size: "4"}`, "{}"))
	if r, b := racks("slices", 8); len(r) != 2 || len(b) != 1 {
		t.Errorf("the gang in slices of a rack runs in racks %v of blocks %v, want two racks of one block", r, b)
	}
	perRack := map[string]int{}
	for _, h := range e.hostsOf("slices") {
		perRack[rackOf[h]]++
	}
	for rack, n := range perRack {
		if n != 4 {
			t.Errorf("the gang in slices of 4 has %d pods in rack %s: %v", n, rack, perRack)
		}
	}
}

// TestTopologyElasticJobGrowsInItsRack grows an elastic Job of 2 pods of
// 8 GPUs that requires a rack to 4: the 2 pods it adds are queued as a
// slice placed where the Job's template lets them go, its rack, and run
// there beside the first 2, on the hosts the grown admission names.
func TestTopologyElasticJobGrowsInItsRack(t *testing.T) {
	e := newEnv(t)
	e.fabricQueue("fabric", "")
	manifest := gangOf(e.ns, "grow", "", 2, "{berth.dev/podset-required-topology: cloud.berth.dev/rack}", "{}")
	manifest = strings.Replace(manifest, "completions: 2", "completions: 100", 1)
	manifest = strings.Replace(manifest, "metadata: {name: grow,", `metadata: {annotations: {berth.dev/elastic: "true"}, name: grow,`, 1)
	apply(t, manifest)
	rackOf := func(ctx context.Context, pods int) (string, error) {
		hosts := e.hostsOf("grow")
		out := get(ctx, "pods", "-n", e.ns, "-l", "job-name=grow", "-o", "jsonpath={range .items[*]}{.status.phase} {end}")
		if len(hosts) != pods || strings.Count(out, "Running") != pods {
			return "", fmt.Errorf("pods on %v: %s", hosts, out)
		}
		racks := map[string]bool{}
		for _, h := range hosts {
			racks[get(ctx, "node", h, "-o", `jsonpath={.metadata.labels.cloud\.berth\.dev/rack}`)] = true
		}
		if len(racks) != 1 {
			return "", fmt.Errorf("pods on %v in racks %v, want one", hosts, racks)
		}
		for r := range racks {
			return r, nil
		}
		return "", nil
	}
	var first string
	eventually(t, "the elastic Job's 2 pods running in one rack", 120*time.Second, func(ctx context.Context) (err error) {
		first, err = rackOf(ctx, 2)
		return err
	})
	if _, err := kubectl(t.Context(), "", "patch", "job", "grow", "-n", e.ns, "--type=merge", "-p", `{"spec":{"parallelism":4}}`); err != nil {
		t.Fatalf("raising the elastic Job's parallelism: %v", err)
	}
	eventually(t, "the elastic Job's 4 pods running in its rack, on the hosts of its grown admission", 120*time.Second, func(ctx context.Context) error {
		rack, err := rackOf(ctx, 4)
		if err != nil {
			return err
		}
		if rack != first {
			return fmt.Errorf("the Job grew into rack %s, not its own %s", rack, first)
		}
		if hosts, assigned := e.hostsOf("grow"), e.assignedHosts(ctx, "grow"); !slices.Equal(hosts, assigned) {
			return fmt.Errorf("pods on %v, admission names %v", hosts, assigned)
		}
		return nil
	})
}

// fabricQueue applies the sample Topology and flavor, and makes LocalQueue
// main of a ClusterQueue named for base with 256 GPUs of the fabric's
// flavor, whose pods berth-scheduler places; spec is more of its spec.
func (e *env) fabricQueue(base, spec string) {
	sample, err := os.ReadFile(filepath.Join(root, "config", "samples", "topology", "topology.yaml"))
	if err != nil {
		e.t.Fatal(err)
	}
	apply(e.t, string(sample))
	e.localQueue("main", e.queue(base, "  schedulerName: berth-scheduler\n"+spec, gpuQuota{flavor: "h100-fabric", gpus: "256"}))
}

// hostsOf returns the nodes the pods of job run on, sorted, one entry a pod.
func (e *env) hostsOf(job string) []string {
	hosts := strings.Fields(get(e.t.Context(), "pods", "-n", e.ns, "-l", "job-name="+job, "-o",
		"jsonpath={range .items[*]}{.spec.nodeName} {end}"))
	slices.Sort(hosts)
	return hosts
}

// assignedHosts returns the hosts of the topology assignment of job's
// Workload, sorted, each as many times as its count.
func (e *env) assignedHosts(ctx context.Context, job string) []string {
	out := get(ctx, "workload", e.workload(ctx, job), "-n", e.ns, "-o",
		"jsonpath={.status.admission.podSetAssignments[0].topologyAssignment}")
	var ta struct {
		Domains []struct {
			Values []string
			Count  int
		}
	}
	if err := json.Unmarshal([]byte(out), &ta); err != nil {
		e.t.Fatalf("topology assignment %q: %v", out, err)
	}
	var hosts []string
	for _, d := range ta.Domains {
		for range d.Count {
			hosts = append(hosts, d.Values[len(d.Values)-1])
		}
	}
	slices.Sort(hosts)
	return hosts
}

// TestTopologyDefragmentation fragments the fabric with a low-priority
// single-pod job on one host of each of its 8 racks, so that no rack has
// room for a gang of 4 x 8 GPUs that requires one, although the quota
// has. The gang preempts one filler, in the first rack, says which rack
// and why, and runs there; the pods on the nodes show it.
func TestTopologyDefragmentation(t *testing.T) {
	e := newEnv(t)
	e.fabricQueue("defrag", "  preemption: {withinClusterQueue: LowerPriority}\n")
	low, high := e.priorityClass("low", 1), e.priorityClass("high", 100)
	for b := range 2 {
		for r := range 4 {
			host := fmt.Sprintf("fabric-b%d-r%d-h1", b, r)
			apply(t, gangOf(e.ns, fmt.Sprintf("filler-%d-%d", b, r), low, 1, "{}", "{kubernetes.io/hostname: "+host+"}"))
		}
	}
	for b := range 2 {
		for r := range 4 {
			e.waitCondition(fmt.Sprintf("filler-%d-%d", b, r), "Admitted", "True", "")
		}
	}
	apply(t, gangOf(e.ns, "gang", high, 4, "{berth.dev/podset-required-topology: cloud.berth.dev/rack}", "{}"))
	e.waitCondition("filler-0-0", "Preempted", "True", "InClusterQueue")
	_, _, msg := e.condition(t.Context(), "filler-0-0", "Evicted")
	if !strings.Contains(msg, "to free cloud.berth.dev/rack block-0/rack-0-0 for its podset main (4 pods)") {
		t.Errorf("the filler's eviction says %q, want the rack it frees and why", msg)
	}
	e.waitCondition("gang", "Admitted", "True", "")
	eventually(t, "the gang's 4 pods running in rack-0-0", 120*time.Second, func(ctx context.Context) error {
		out := get(ctx, "pods", "-n", e.ns, "-l", "job-name=gang", "-o", "jsonpath={range .items[*]}{.spec.nodeName}:{.status.phase} {end}")
		pods := strings.Fields(out)
		if len(pods) != 4 {
			return fmt.Errorf("pods: %s", out)
		}
		for _, p := range pods {
			if !strings.HasPrefix(p, "fabric-b0-r0-") || !strings.HasSuffix(p, ":Running") {
				return fmt.Errorf("pods: %s", out)
			}
		}
		return nil
	})
	for b := range 2 {
		for r := range 4 {
			if b+r == 0 {
				continue
			}
			if s, _, _ := e.condition(t.Context(), fmt.Sprintf("filler-%d-%d", b, r), "Evicted"); s == "True" {
				t.Errorf("filler-%d-%d was evicted too: one eviction frees a rack", b, r)
			}
		}
	}
}
