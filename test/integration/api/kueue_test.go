package api

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// fromKueue renames a manifest of Kueue's API to Berth's: the group and
// version, and the provisioning admission check's controller.
var fromKueue = strings.NewReplacer(
	"kueue.x-k8s.io/v1beta2", berthv1alpha1.GroupVersion.String(),
	"kueue.x-k8s.io/provisioning-request", berthv1alpha1.ProvisioningRequestControllerName,
	"apiGroup: kueue.x-k8s.io", "apiGroup: "+berthv1alpha1.GroupVersion.Group,
)

// TestKueueManifestsApply creates, renamed, the manifests in the shapes of
// Kueue's documented examples (testdata/kueue): every field a platform team
// brings from Kueue is accepted, whether Berth acts on it or says in a
// condition that it does not.
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
			for _, doc := range bytes.Split([]byte(fromKueue.Replace(string(raw))), []byte("\n---\n")) {
				obj := &unstructured.Unstructured{}
				if err := yaml.UnmarshalStrict(doc, &obj.Object); err != nil {
					t.Fatalf("decoding %s: %v", file, err)
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
