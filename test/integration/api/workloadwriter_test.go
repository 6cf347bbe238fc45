package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// methods records the method and the body of every request that passes,
// and the body of its answer.
type methods struct {
	next    http.RoundTripper
	mu      sync.Mutex
	seen    []string
	bodies  [][]byte
	answers [][]byte
}

func (m *methods) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := m.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	m.mu.Lock()
	m.seen = append(m.seen, r.Method+" "+r.URL.Path)
	m.bodies = append(m.bodies, body)
	m.answers = append(m.answers, answer)
	m.mu.Unlock()
	return resp, nil
}

// recordedWriter is the manager's Workload writer, its requests and
// answers recorded.
func recordedWriter(t *testing.T) (workloadwriter.Writer, *methods) {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	seen := &methods{next: httpClient.Transport}
	httpClient.Transport = seen
	w, err := workloadwriter.New(server.Config, httpClient, server.Client.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	return w, seen
}

// The manager's client creates a Workload with a POST answered with its
// metadata alone, and takes that metadata; a second create is refused as
// AlreadyExists.
func TestWorkloadWriterCreates(t *testing.T) {
	ctx := testContext(t)
	w, seen := recordedWriter(t)
	u := object(t, "apiVersion: berth.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: created\n  namespace: default\n  labels: {app: train}\nspec:\n  queueName: main\n  podSets:\n"+podSet("main", 2, ""))
	wl := &berthv1alpha1.Workload{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, wl); err != nil {
		t.Fatal(err)
	}
	sent := wl.DeepCopy()
	if err := w.Create(ctx, wl); err != nil {
		t.Fatal(err)
	}
	if want := "POST /apis/berth.dev/v1alpha1/namespaces/default/workloads"; len(seen.seen) != 1 || seen.seen[0] != want {
		t.Fatalf("requests %v, want one: %s", seen.seen, want)
	}
	var answer map[string]any
	if err := json.Unmarshal(seen.answers[0], &answer); err != nil {
		t.Fatal(err)
	}
	if _, ok := answer["spec"]; ok || answer["kind"] != "PartialObjectMetadata" {
		t.Errorf("answered with %s, want the metadata alone", seen.answers[0])
	}
	stored := &berthv1alpha1.Workload{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), stored); err != nil {
		t.Fatal(err)
	}
	if wl.UID == "" || wl.UID != stored.UID || wl.ResourceVersion != stored.ResourceVersion || !wl.CreationTimestamp.Equal(&stored.CreationTimestamp) || wl.ManagedFields != nil {
		t.Errorf("metadata %+v, want the stored one's (%s, version %s) without managed fields", wl.ObjectMeta, stored.UID, stored.ResourceVersion)
	}
	if !equality.Semantic.DeepEqual(wl.Spec, sent.Spec) || stored.Spec.PodSets[0].Count != 2 || stored.Labels["app"] != "train" {
		t.Errorf("spec %+v stored as %+v, labels %v: want them as sent", wl.Spec, stored.Spec, stored.Labels)
	}
	if err := w.Create(ctx, sent.DeepCopy()); !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating it again: %v, want AlreadyExists", err)
	}
}

// The manager's client writes a Workload's status as a PUT bound to the
// version it read, without the spec: the status changes, the spec, the
// labels and the creator's managed fields stay as they were, and a stale
// version is refused.
func TestWorkloadWriterPutsTheStatus(t *testing.T) {
	ctx := testContext(t)
	u := object(t, "apiVersion: berth.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: status-put\n  namespace: default\n  labels: {app: train}\nspec:\n  queueName: main\n  podSets:\n"+podSet("main", 2, ""))
	if err := create(ctx, t, u); err != nil {
		t.Fatal(err)
	}
	w, seen := recordedWriter(t)

	wl := &berthv1alpha1.Workload{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(u), wl); err != nil {
		t.Fatal(err)
	}
	stale := wl.DeepCopy()
	// As the manager's cache holds it.
	wl.ManagedFields = nil
	if _, err := workloadwriter.Apply(ctx, w, wl, workload.Finish("Succeeded", "The job succeeded")); err != nil {
		t.Fatal(err)
	}
	if want := "PUT /apis/berth.dev/v1alpha1/namespaces/default/workloads/status-put/status"; len(seen.seen) != 1 || seen.seen[0] != want {
		t.Fatalf("requests %v, want one: %s", seen.seen, want)
	}
	var sent map[string]any
	if err := json.Unmarshal(seen.bodies[0], &sent); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent["spec"]; ok || sent["status"] == nil {
		t.Errorf("the PUT sent %s, want the status without the spec", seen.bodies[0])
	}

	got := &berthv1alpha1.Workload{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	if !workload.IsFinished(got) {
		t.Errorf("conditions %+v, want Finished", got.Status.Conditions)
	}
	if got.Spec.PodSets[0].Count != 2 || got.Labels["app"] != "train" {
		t.Errorf("spec %+v, labels %v: want them as created", got.Spec, got.Labels)
	}
	managers := map[string]string{}
	for _, e := range got.ManagedFields {
		managers[e.Manager+"/"+e.Subresource] = string(e.FieldsV1.GetRawBytes())
	}
	creator := stale.ManagedFields[0]
	if len(managers) != 2 || managers[creator.Manager+"/"] != string(creator.FieldsV1.GetRawBytes()) {
		t.Errorf("managed fields %v, want the creator's as they were (%s) beside the status writer's", managers, creator.FieldsV1.GetRawBytes())
	}

	_, err := workloadwriter.Apply(ctx, w, stale, workload.Evict(berthv1alpha1.ReasonPreempted, "stale"))
	if !apierrors.IsConflict(err) {
		t.Errorf("writing over a stale version: %v, want a conflict", err)
	}
}
