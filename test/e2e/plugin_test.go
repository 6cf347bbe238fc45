package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// berthPlugin runs kubectl berth, the plugin kubectl finds on PATH. A
// plugin's flags come after its name.
func berthPlugin(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "k8s", "kubectl"), append([]string{"berth"}, append(args, "--kubeconfig", kubeconfig)...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl berth %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// TestPluginPositionsFollowARelabel: kubectl berth positions lists the
// waiting jobs in the order Berth tries them, and a priority relabel moves
// a job to the front.
func TestPluginPositionsFollowARelabel(t *testing.T) {
	e := newEnv(t)
	high := e.priorityClass("high", 1000)
	cq := e.queue("positions", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.submit(jobSpec{name: "holder", queue: "main", completions: 1, parallelism: 1, gpus: 8})
	e.running("holder", 1)
	for _, name := range []string{"first", "second", "third"} {
		e.submit(jobSpec{name: name, queue: "main", completions: 1, parallelism: 1, gpus: 8})
		time.Sleep(1100 * time.Millisecond) // creation times a second apart
	}
	order := func(ctx context.Context) ([]string, error) {
		out, err := berthPlugin(ctx, "positions", "clusterqueue", cq, "-o", "json")
		if err != nil {
			return nil, err
		}
		var list struct {
			Items []struct {
				Name                   string
				PositionInClusterQueue int
			}
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return nil, fmt.Errorf("%w: %s", err, out)
		}
		var names []string
		for i, it := range list.Items {
			if it.PositionInClusterQueue != i+1 {
				return nil, fmt.Errorf("item %d at position %d", i, it.PositionInClusterQueue)
			}
			names = append(names, it.Name)
		}
		return names, nil
	}
	want := func(jobs ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			names, err := order(ctx)
			if err != nil {
				return err
			}
			for i, job := range jobs {
				if i >= len(names) || names[i] != e.workload(ctx, job) {
					return fmt.Errorf("positions %v, want the workloads of %v", names, jobs)
				}
			}
			return nil
		}
	}
	eventually(t, "the jobs in their order of creation", time.Minute, want("first", "second", "third"))
	if _, err := kubectl(t.Context(), "", "label", "job", "third", "-n", e.ns, "berth.dev/priority-class="+high); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the relabelled job first", time.Minute, want("third", "first", "second"))
	out, err := berthPlugin(t.Context(), "why", "job/second", "-n", e.ns)
	if err != nil || !strings.Contains(out, "3 in its ClusterQueue") || !strings.Contains(out, "Ahead of it:") {
		t.Errorf("why job/second: %v\n%s", err, out)
	}
}

// TestPluginWhatIfPredictsAPreemption: kubectl berth what-if says that a
// high-priority job would preempt the running one, without a write; then
// the job is submitted and that preemption happens.
func TestPluginWhatIfPredictsAPreemption(t *testing.T) {
	e := newEnv(t)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	cq := e.queue("whatif", "  preemption: {withinClusterQueue: LowerPriority}\n", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.submit(jobSpec{name: "victim", queue: "main", priorityClass: low, completions: 1, parallelism: 1, gpus: 8})
	e.running("victim", 1)
	victim := e.workload(t.Context(), "victim")
	manifest := filepath.Join(t.TempDir(), "job.yaml")
	preemptor := jobSpec{name: "preemptor", queue: "main", priorityClass: high, completions: 1, parallelism: 1, gpus: 8, runFor: "5s"}
	if err := os.WriteFile(manifest, []byte(e.jobYAML(preemptor)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := berthPlugin(t.Context(), "what-if", "-f", manifest, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var verdict struct {
		Admitted     bool
		ClusterQueue string
		Preempts     []struct{ Namespace, Name string }
		Message      string
	}
	if err := json.Unmarshal([]byte(out), &verdict); err != nil {
		t.Fatal(err)
	}
	if verdict.Admitted || verdict.ClusterQueue != cq || len(verdict.Preempts) != 1 || verdict.Preempts[0].Name != victim {
		t.Fatalf("what-if says %+v, want the preemption of %s in %s", verdict, victim, cq)
	}
	if get(t.Context(), "job", "preemptor", "-n", e.ns) != "" || workloadsIn(t, e.ns) != 1 {
		t.Fatal("what-if wrote something")
	}
	e.submit(preemptor)
	e.waitCondition("victim", "Preempted", "True", "InClusterQueue")
	e.waitCondition("preemptor", "Admitted", "True", "")

	// The victim's history tells it, from the events Berth recorded.
	eventually(t, "the victim's history", time.Minute, func(ctx context.Context) error {
		out, err := berthPlugin(ctx, "history", "job/victim", "-n", e.ns, "-o", "json")
		if err != nil {
			return err
		}
		var list struct {
			Workloads []struct {
				Events []struct{ Reason, Object string }
				Spans  []struct{ State string }
			}
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Workloads) != 1 {
			return fmt.Errorf("%v: %s", err, out)
		}
		h := list.Workloads[0]
		var reasons, states []string
		for _, en := range h.Events {
			reasons = append(reasons, en.Reason)
		}
		for _, s := range h.Spans {
			states = append(states, s.State)
		}
		// No QuotaReserved: admitted at once, the victim has no event of
		// it, and its condition is False once its quota is released.
		for _, want := range []string{"CreatedWorkload", "Admitted", "Preempted"} {
			if !slices.Contains(reasons, want) {
				return fmt.Errorf("history %v lacks %s", reasons, want)
			}
		}
		if i := slices.Index(states, "Admitted"); i < 0 || !slices.Contains(states[i:], "Evicted") {
			return fmt.Errorf("states %v, want Admitted then Evicted", states)
		}
		return nil
	})
}

func workloadsIn(t *testing.T, ns string) int {
	t.Helper()
	return len(strings.Fields(get(t.Context(), "wl", "-n", ns, "-o", "name")))
}

// TestPluginReadsTheVisibilityAPIAsANamespaceUser: a user who may edit one
// namespace (edit, which aggregates berth-batch-user), and read no other's
// Workloads, sees through the visibility
// API their workloads' places in the ClusterQueue, which kubectl berth
// could not compute for them, and is refused the ClusterQueue's list.
func TestPluginReadsTheVisibilityAPIAsANamespaceUser(t *testing.T) {
	e := newEnv(t)
	cq := e.queue("visibility", "", gpuQuota{flavor: e.flavor("h100"), gpus: "8"})
	e.localQueue("main", cq)
	e.submit(jobSpec{name: "holder", queue: "main", completions: 1, parallelism: 1, gpus: 8})
	e.running("holder", 1)
	for _, name := range []string{"first", "second"} {
		e.submit(jobSpec{name: name, queue: "main", completions: 1, parallelism: 1, gpus: 8})
		time.Sleep(1100 * time.Millisecond) // creation times a second apart
	}
	user := "alice-" + e.ns
	if _, err := kubectl(t.Context(), "", "create", "rolebinding", "alice", "-n", e.ns, "--clusterrole=edit", "--user="+user); err != nil {
		t.Fatal(err)
	}
	path := "/apis/visibility.berth.dev/v1alpha1/namespaces/" + e.ns + "/localqueues/main/pendingworkloads"
	eventually(t, "the user reads the LocalQueue through the API server", time.Minute, func(ctx context.Context) error {
		out, err := kubectl(ctx, "", "get", "--raw", path, "--as", user)
		if err != nil {
			return err
		}
		var s struct {
			ClusterQueue          string
			PendingInClusterQueue int
			Items                 []struct {
				Name                                         string
				PositionInClusterQueue, PositionInLocalQueue int
			}
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if s.ClusterQueue != cq || s.PendingInClusterQueue != 2 || len(s.Items) != 2 || s.Items[1].Name != e.workload(ctx, "second") ||
			s.Items[1].PositionInClusterQueue != 2 || s.Items[1].PositionInLocalQueue != 2 {
			return fmt.Errorf("not the two waiting jobs in order: %s", out)
		}
		return nil
	})
	if out, err := kubectl(t.Context(), "", "get", "--raw", "/apis/visibility.berth.dev/v1alpha1/clusterqueues/"+cq+"/pendingworkloads", "--as", user); err == nil || !strings.Contains(err.Error()+out, "forbidden") {
		t.Errorf("the user read the ClusterQueue's pending workloads: %v\n%s", err, out)
	}
	out, err := berthPlugin(t.Context(), "why", "job/second", "-n", e.ns, "--as", user)
	if err != nil || !strings.Contains(out, "2 in its LocalQueue, 2 in its ClusterQueue") {
		t.Errorf("why job/second as %s: %v\n%s", user, err, out)
	}

	// The user opens the namespace's dashboard, served by the controller,
	// through kubectl proxy: no plugin, one address.
	url := proxy(t, "--as", user) + "/apis/visibility.berth.dev/v1alpha1/namespaces/" + e.ns + "/dashboard/overview"
	ctx, cancel := context.WithTimeout(browser(t), time.Minute)
	defer cancel()
	second := fmt.Sprintf(`tr.pending-workload[data-workload=%q] td.position`, e.ns+"/"+e.workload(t.Context(), "second"))
	var lqs, position string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		chromedp.Text(`table.localqueues`, &lqs),
		chromedp.Navigate(strings.TrimSuffix(url, "overview")+"queue?name="+cq),
		chromedp.Text(second, &position),
	); err != nil {
		t.Fatalf("the served dashboard at %s: %v", url, err)
	}
	if !strings.Contains(lqs, e.ns+"/main") || position != "2" {
		t.Errorf("the served dashboard shows LocalQueues %q and the second job at %q; want %s/main and 2", lqs, position, e.ns)
	}
	if out, err := kubectl(t.Context(), "", "get", "--raw", "/apis/visibility.berth.dev/v1alpha1/clusterdashboard/overview", "--as", user); err == nil || !strings.Contains(err.Error()+out, "forbidden") {
		t.Errorf("the user read the cluster's dashboard: %v\n%s", err, out)
	}
}
