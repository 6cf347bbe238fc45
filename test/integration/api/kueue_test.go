package api

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/pkg/fromkueue"
)

// TestKueueManifestsApply creates, converted as kubectl berth convert
// does, the manifests in the shapes of Kueue's documented examples
// (testdata/kueue): every object a platform team brings from Kueue is
// accepted, whether Berth acts on all of it or says what it does not.
func TestKueueManifestsApply(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "kueue", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in testdata/kueue: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			createConverted(t, raw)
		})
	}
}

// kueueModule is the release of Kueue whose own manifests
// TestKueuesOwnManifestsApply converts, and the checksum the Go checksum
// database gives its module.
const (
	kueueModule    = "sigs.k8s.io/kueue@v0.17.0"
	kueueModuleSum = "h1:7hzb38M4eKGzYW+CFv2s1L+swzzacUCHOCXxZmAV90I="
)

// TestKueuesOwnManifestsApply converts and creates every manifest of
// Kueue's objects and queued jobs that Kueue's module ships (its
// visualiser's examples and its performance tests' prerequisites), taken
// from the Go module proxy. Go templates (a performance test's, with
// placeholders for numbers) and installation files are not manifests a
// team applies. Kueue's documentation site is a module of its own that
// the proxy does not serve; testdata/kueue has manifests in the shapes of
// its examples.
func TestKueuesOwnManifestsApply(t *testing.T) {
	dir := kueueModuleDir(t)
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == "config" || rel == "charts" || rel == "hack" || rel == filepath.Join("test", "e2e", "config") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if kueueManifest.Match(raw) && !bytes.Contains(raw, []byte("{{")) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Kueue v0.17.0 ships ten such files: eight examples, two flavors.
	if len(files) != 10 {
		t.Fatalf("found %d manifests of Kueue's objects in %s, want 10: %v", len(files), dir, files)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			createConverted(t, raw)
		})
	}
}

// kueueModuleDir downloads kueueModule into the module cache, checks its
// checksum and returns its directory.
func kueueModuleDir(t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", kueueModule)
	cmd.Dir = t.TempDir() // outside Berth's module: Berth does not require Kueue
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v\n%s", kueueModule, err, out)
	}
	var m struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Error != "" {
		t.Fatalf("go mod download %s: %v %s", kueueModule, err, m.Error)
	}
	if m.Sum != kueueModuleSum {
		t.Fatalf("%s has checksum %s, want %s", kueueModule, m.Sum, kueueModuleSum)
	}
	return m.Dir
}

var (
	// kueueManifest matches a file with a Kueue object or a job queued
	// in Kueue.
	kueueManifest     = regexp.MustCompile(`apiVersion: kueue\.x-k8s\.io/|kueue\.x-k8s\.io/queue-name`)
	documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)
)

// createConverted converts each object of a multi-document manifest as
// kubectl berth convert does and creates it as a dry run, failing the test
// for each object the API server refuses.
func createConverted(t *testing.T, raw []byte) {
	t.Helper()
	ctx := testContext(t)
	for _, doc := range documentSeparator.Split(string(raw), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.UnmarshalStrict([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("decoding: %v", err)
		}
		if len(obj.Object) == 0 {
			continue // comments only
		}
		keep, notes := fromkueue.Convert(obj)
		for _, n := range notes {
			t.Logf("note: %s", n)
		}
		if !keep {
			continue
		}
		if out, _ := json.Marshal(obj.Object); bytes.Contains(out, []byte("kueue.x-k8s.io")) {
			t.Errorf("%s %s still names Kueue's group after conversion: %s", obj.GetKind(), obj.GetName(), out)
		}
		// As kubectl apply does, a namespaced object without a namespace
		// goes to the default one.
		if namespaced, err := server.Client.IsObjectNamespaced(obj); err != nil {
			t.Fatal(err)
		} else if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace("default")
		}
		// A dry run: validated and defaulted by the CRD and the policies
		// as a create would be, without the files' shared names meeting.
		// Strict: a field Berth does not know is refused, not dropped in
		// silence.
		if err := server.Client.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s %s refused: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}
