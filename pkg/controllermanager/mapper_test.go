package controllermanager

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper answers Workloads and counts the questions.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	if gk.Kind != "Workload" {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: gk.Group, Version: versions[0], Resource: "workloads"},
		GroupVersionKind: gk.WithVersion(versions[0]),
		Scope:            meta.RESTScopeNamespace,
	}, nil
}

func TestRESTMapperRemembersFoundMappings(t *testing.T) {
	inner := &countingMapper{}
	m := &rememberingMapper{RESTMapper: inner}
	wl := schema.GroupKind{Group: "berth.dev", Kind: "Workload"}
	for range 3 {
		mapping, err := m.RESTMapping(wl, "v1alpha1")
		if err != nil || mapping.Resource.Resource != "workloads" {
			t.Fatalf("got %v, %v; want the workloads resource", mapping, err)
		}
		mapping.Resource.Resource = "changed by a caller"
	}
	if inner.asked != 1 {
		t.Errorf("the wrapped mapper was asked %d times, want once", inner.asked)
	}
	missing := schema.GroupKind{Group: "example.com", Kind: "Missing"}
	for range 2 {
		var noMatch *meta.NoKindMatchError
		if _, err := m.RESTMapping(missing, "v1"); !errors.As(err, &noMatch) {
			t.Fatalf("got %v, want no match", err)
		}
	}
	if inner.asked != 3 {
		t.Errorf("the wrapped mapper was asked %d times, want 3: a kind not found is asked again", inner.asked)
	}
}
