package kubectlberth

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestConvertCommand: kubectl berth convert reads files and the standard
// input, writes Berth's objects, and says on the standard error what it
// left out.
func TestConvertCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kueue.yaml")
	manifests := `apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec: {cohort: all}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: default}
`
	if err := os.WriteFile(file, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	stdin := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {kueue.x-k8s.io/queue-name: q}}\n"
	convert := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := newCommand(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut},
			func() (client.Client, error) { t.Fatal("convert reads no cluster"); return nil, nil })
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("convert %v: %v", args, err)
		}
		return out.String(), errOut.String()
	}
	out, notes := convert("convert", "-f", file, "-f", "-")
	for _, want := range []string{"apiVersion: berth.dev/v1alpha1", "cohortName: all", "---\napiVersion: v1", "berth.dev/queue-name: q"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Topology") || !strings.Contains(notes, "convert: Topology default: kind: Berth has no Topology yet; left out") {
		t.Errorf("the Topology: output\n%s\nnotes\n%s", out, notes)
	}
	// What kubectl get -o yaml prints: a List.
	stdin = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: kueue.x-k8s.io/v1beta2, kind: Cohort, metadata: {name: org, resourceVersion: \"7\"}}\n"
	if out, _ := convert("convert", "-f", "-"); !strings.Contains(out, "kind: Cohort") || strings.Contains(out, "kueue") || strings.Contains(out, "resourceVersion") {
		t.Errorf("a List:\n%s", out)
	}
	if out, _ := convert("convert", "-f", file, "-o", "json"); !strings.Contains(out, `"kind": "List"`) || !strings.Contains(out, `"cohortName": "all"`) {
		t.Errorf("-o json:\n%s", out)
	}
}
