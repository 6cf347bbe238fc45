package api

import (
	"net/http"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controller"
	"github.com/berth-dev/berth/pkg/controller/core"
	"github.com/berth-dev/berth/pkg/workload"
)

// methods records the method of every request that passes.
type methods struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (m *methods) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, r.Method+" "+r.URL.Path)
	m.mu.Unlock()
	return m.next.RoundTrip(r)
}

// The manager's client writes a Workload's status as a PUT bound to the
// version it read: the status changes, the spec and the other writers'
// managed fields stay, and a stale version is refused.
func TestManagerClientPutsWorkloadStatus(t *testing.T) {
	ctx := testContext(t)
	u := object(t, "apiVersion: berth.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: status-put\n  namespace: default\n  labels: {app: train}\nspec:\n  queueName: main\n  podSets:\n"+podSet("main", 2, ""))
	if err := create(ctx, t, u); err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	seen := &methods{next: httpClient.Transport}
	httpClient.Transport = seen
	c, err := controller.NewClient(server.Config, client.Options{Scheme: server.Client.Scheme(), HTTPClient: httpClient})
	if err != nil {
		t.Fatal(err)
	}

	wl := &berthv1alpha1.Workload{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(u), wl); err != nil {
		t.Fatal(err)
	}
	stale := wl.DeepCopy()
	// As the manager's cache holds it.
	wl.ManagedFields = nil
	if err := core.Finish(ctx, c, wl, "Succeeded", "The job succeeded"); err != nil {
		t.Fatal(err)
	}
	if want := "PUT /apis/berth.dev/v1alpha1/namespaces/default/workloads/status-put/status"; len(seen.seen) != 1 || seen.seen[0] != want {
		t.Errorf("requests %v, want one: %s", seen.seen, want)
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
	managers := map[string]bool{}
	for _, e := range got.ManagedFields {
		managers[e.Manager+"/"+e.Subresource] = true
	}
	if len(managers) != 2 {
		t.Errorf("managed fields of %v, want the creator's kept beside the status writer's", managers)
	}

	err = core.Evict(ctx, c, stale, berthv1alpha1.ReasonPreempted, "stale")
	if !apierrors.IsConflict(err) {
		t.Errorf("writing over a stale version: %v, want a conflict", err)
	}
}
