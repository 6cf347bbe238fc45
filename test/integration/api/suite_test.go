package api

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/test/util/apiserver"
)

// server is the one API server of this suite.
var server *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunSuite(m, &server, nil))
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	return apiserver.Context(t, 30*time.Second)
}

// object decodes a YAML manifest.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("decoding manifest: %v\n%s", err, manifest)
	}
	return u
}

// create creates the object and deletes it when the test ends.
func create(ctx context.Context, t *testing.T, obj client.Object) error {
	t.Helper()
	err := server.Client.Create(ctx, obj)
	if err == nil {
		t.Cleanup(func() {
			if err := client.IgnoreNotFound(server.Client.Delete(context.Background(), obj)); err != nil {
				t.Errorf("deleting %s: %v", obj.GetName(), err)
			}
		})
	}
	return err
}

// checkErr fails the test unless err contains every wanted string, or is
// nil when none is wanted.
func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("the API server accepted the object; want an error containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
