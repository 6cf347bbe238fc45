package api

import (
	"bytes"
	"os"
	"path/filepath"
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
			ctx := testContext(t)
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
				obj := &unstructured.Unstructured{}
				if err := yaml.UnmarshalStrict(doc, &obj.Object); err != nil {
					t.Fatalf("decoding %s: %v", file, err)
				}
				keep, notes := fromkueue.Convert(obj)
				for _, n := range notes {
					t.Logf("note: %s", n)
				}
				if !keep {
					continue
				}
				// A dry run: validated and defaulted by the CRD and the
				// policies as a create would be, without the files' shared
				// names meeting. Strict: a field Berth does not know is
				// refused, not dropped in silence.
				if err := server.Client.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
					t.Errorf("%s %s refused: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
		})
	}
}
