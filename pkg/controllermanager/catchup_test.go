package controllermanager

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

func workloadAt(name, rv string) *berthv1alpha1.Workload {
	return &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, ResourceVersion: rv}}
}

// TestWaitForWorkloads: a new leader's first cycle waits until its cache
// holds each Workload at the version the API server has, or a later one,
// and stops waiting for a Workload deleted meanwhile. The two fake clients
// stand for the API server and the informer cache.
func TestWaitForWorkloads(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(workloadAt("admitted", "42"), workloadAt("new", "60")).Build()
	// The cache has "admitted" one write behind, not "new" at all, and
	// an older Workload that the API server no longer has.
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(workloadAt("admitted", "41"), workloadAt("gone", "7")).Build()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- waitForWorkloads(ctx, live, cached) }()
	expectWaiting := func(why string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("returned (%v) while %s", err, why)
		case <-time.After(4 * catchUpPoll):
		}
	}
	expectWaiting(`the cache holds "admitted" at an older version and not "new"`)

	wl := &berthv1alpha1.Workload{}
	if err := cached.Get(ctx, client.ObjectKey{Namespace: "team", Name: "admitted"}, wl); err != nil {
		t.Fatal(err)
	}
	wl.Spec.QueueName = "main"
	if err := cached.Update(ctx, wl); err != nil || wl.ResourceVersion != "42" {
		t.Fatalf("update of the cached copy: %v, resourceVersion %s, want 42", err, wl.ResourceVersion)
	}
	expectWaiting(`the cache does not hold "new"`)

	if err := live.Delete(ctx, workloadAt("new", "")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(catchUpRelist + time.Second):
		t.Fatal(`still waiting for "new", which the API server no longer has`)
	}
}

func TestOlderVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		older bool
	}{
		{"9", "10", true}, // as numbers, not as text
		{"10", "9", false},
		{"10", "10", false},
		{"x", "x", false},
		{"x", "10", true},
	} {
		if got := olderVersion(tc.a, tc.b); got != tc.older {
			t.Errorf("olderVersion(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.older)
		}
	}
}
