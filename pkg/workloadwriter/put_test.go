package workloadwriter

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// answer is a Workload's metadata as the API server answers a write: the
// resourceVersion first, then three writers' managed fields.
func answer(t testing.TB) []byte {
	t.Helper()
	at := metav1.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	m := metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "small-0-0", Namespace: "cohort-0-cq-0", UID: "25f29762-4f43-4d05-a408-78bea69b31f1",
			ResourceVersion: "4242", Generation: 1, CreationTimestamp: at, Labels: map[string]string{"perf.berth.dev/class": "small"},
		},
	}
	for _, manager := range []string{"berth", "perf", "runner"} {
		m.ManagedFields = append(m.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "berth.dev/v1alpha1", Time: &at, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{".":{},"f:admission":{".":{},"f:clusterQueue":{},"f:podSetAssignments":{".":{},"k:{\"name\":\"main\"}":{".":{},"f:count":{},"f:flavors":{".":{},"f:cpu":{}}}}},"f:conditions":{".":{},"k:{\"type\":\"Admitted\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`),
		})
	}
	raw, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestResourceVersionOf(t *testing.T) {
	good := map[string]string{
		"as the API server answers":        string(answer(t)),
		"after the managed fields":         `{"metadata":{"managedFields":[{"manager":"x","fieldsV1":{"f:a":{}}}],"resourceVersion":"7"}}`,
		"after other fields of the object": `{"kind":"Workload","spec":{"metadata":{"resourceVersion":"1"}},"metadata":{"name":"a","resourceVersion":"7"}}`,
	}
	wants := map[string]string{"as the API server answers": "4242"}
	for name, raw := range good {
		got, err := resourceVersionOf([]byte(raw))
		want := wants[name]
		if want == "" {
			want = "7"
		}
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, want)
		}
	}
	for name, raw := range map[string]string{
		"no metadata":         `{"kind":"Workload","status":{}}`,
		"no resourceVersion":  `{"metadata":{"name":"a"}}`,
		"an empty version":    `{"metadata":{"resourceVersion":""}}`,
		"a number":            `{"metadata":{"resourceVersion":7}}`,
		"metadata not object": `{"metadata":"a"}`,
		"not JSON":            `{"metadata":{"resourceVersion"`,
		"not an object":       `[]`,
	} {
		if got, err := resourceVersionOf([]byte(raw)); err == nil {
			t.Errorf("%s: got %q, want an error", name, got)
		}
	}
}

// BenchmarkResourceVersionOf reads the version of a write's answer, against
// decoding the whole answer with encoding/json.
func BenchmarkResourceVersionOf(b *testing.B) {
	raw := answer(b)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rv, err := resourceVersionOf(raw); err != nil || rv != "4242" {
				b.Fatal(rv, err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &a); err != nil || a.Metadata.ResourceVersion != "4242" {
				b.Fatal(err)
			}
		}
	})
}
