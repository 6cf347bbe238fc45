package api

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berth-dev/berth/test/util/apiserver"
)

// columns splits kubectl's table output into its tables' header rows.
func headers(out string) [][]string {
	var tables [][]string
	sep := regexp.MustCompile(`\s{2,}`)
	header := true
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			header = true
		case header:
			tables = append(tables, sep.Split(strings.TrimSpace(line), -1))
			header = false
		}
	}
	return tables
}

// TestKubectlSamplesAndColumns applies config/samples with the real kubectl,
// as a newcomer would, and checks the columns of `kubectl get`.
func TestKubectlSamplesAndColumns(t *testing.T) {
	ctx := testContext(t)
	samples := filepath.Join(apiserver.RepoRoot(), "config", "samples")
	if out, errOut, err := server.Kubectl(ctx, "apply", "-f", samples); err != nil {
		t.Fatalf("kubectl apply -f config/samples: %v\n%s%s", err, out, errOut)
	}
	t.Cleanup(func() { _, _, _ = server.Kubectl(t.Context(), "delete", "--wait=false", "-f", samples) })
	// A worker's side of dispatch, checked by the server but not kept: its
	// LocalQueue has the name of the manager's.
	worker := filepath.Join(samples, "multicluster", "worker.yaml")
	if out, errOut, err := server.Kubectl(ctx, "apply", "--dry-run=server", "-f", worker); err != nil {
		t.Fatalf("kubectl apply --dry-run=server -f config/samples/multicluster/worker.yaml: %v\n%s%s", err, out, errOut)
	}
	// The local cluster's fabric: a Topology and the flavor that names it;
	// the manager's side of dispatch to worker clusters.
	for _, sample := range []string{"topology", filepath.Join("multicluster", "manager.yaml")} {
		path := filepath.Join(samples, sample)
		if out, errOut, err := server.Kubectl(ctx, "apply", "-f", path); err != nil {
			t.Fatalf("kubectl apply -f config/samples/%s: %v\n%s%s", sample, err, out, errOut)
		}
		t.Cleanup(func() { _, _, _ = server.Kubectl(t.Context(), "delete", "--wait=false", "-f", path) })
	}
	wl := `apiVersion: berth.dev/v1alpha1
kind: Workload
metadata: {name: kubectl-columns, namespace: default}
spec:
  queueName: training
  priority: 1000
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}]
`
	if err := create(ctx, t, object(t, wl)); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		args        []string
		wantHeaders [][]string
		wantRow     string
	}{
		"cq,lq,rf,wpc": {
			args: []string{"get", "cq,lq,rf,wpc"},
			wantHeaders: [][]string{
				{"NAME", "COHORT", "PENDING", "ADMITTED", "AGE"},
				{"NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED", "AGE"},
				{"NAME", "AGE"},
				{"NAME", "VALUE"},
			},
			wantRow: `clusterqueue.berth.dev/team-a\s+research\s`,
		},
		"cq wide": {
			args:        []string{"get", "cq", "team-a", "-o", "wide"},
			wantHeaders: [][]string{{"NAME", "COHORT", "STRATEGY", "PENDING", "RESERVING", "ADMITTED", "AGE"}},
			wantRow:     `team-a\s+research\s+BestEffortFIFO\s`,
		},
		"wl": {
			args:        []string{"get", "wl", "kubectl-columns"},
			wantHeaders: [][]string{{"NAME", "QUEUE", "RESERVED IN", "ADMITTED", "FINISHED", "AGE"}},
			wantRow:     `kubectl-columns\s+training\s`,
		},
		"wl wide": {
			args:        []string{"get", "wl", "kubectl-columns", "-o", "wide"},
			wantHeaders: [][]string{{"NAME", "QUEUE", "RESERVED IN", "ADMITTED", "FINISHED", "AGE", "PRIORITY"}},
			wantRow:     `kubectl-columns\s+training\s+\S+\s+1000\n`,
		},
		"wpc": {
			args:        []string{"get", "wpc", "production"},
			wantHeaders: [][]string{{"NAME", "VALUE"}},
			wantRow:     `production\s+1000\n`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := server.Kubectl(ctx, tc.args...)
			if err != nil {
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(tc.args, " "), err, errOut)
			}
			if diff := cmp.Diff(tc.wantHeaders, headers(out)); diff != "" {
				t.Errorf("headers (-want +got):\n%s\n%s", diff, out)
			}
			if !regexp.MustCompile(tc.wantRow).MatchString(out) {
				t.Errorf("no row matching %q in:\n%s", tc.wantRow, out)
			}
		})
	}
}

// TestKubectlRefusesBorrowingWithoutCohort is what an admin sees applying a
// ClusterQueue that borrows without a cohort.
func TestKubectlRefusesBorrowingWithoutCohort(t *testing.T) {
	ctx := testContext(t)
	file := filepath.Join(t.TempDir(), "cq.yaml")
	writeFile(t, file, "apiVersion: berth.dev/v1alpha1\nkind: ClusterQueue\nmetadata:\n  name: lonely\n"+
		gpuQueue("", "        nominalQuota: 8\n        borrowingLimit: 4"))
	_, errOut, err := server.Kubectl(ctx, "apply", "-f", file)
	if err == nil {
		_, _, _ = server.Kubectl(ctx, "delete", "-f", file)
		t.Fatal("kubectl apply succeeded; want it refused")
	}
	for _, want := range []string{`The ClusterQueue "lonely" is invalid`, "borrowingLimit may only be set when spec.cohortName is set"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("kubectl's error does not contain %q:\n%s", want, errOut)
		}
	}
}
