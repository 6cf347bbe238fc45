package visibility

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	visibilityv1alpha1 "github.com/berth-dev/berth/apis/visibility/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/queue"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// queues holds, in ClusterQueue "gpu": a0, b0, a1, b1, a2 (a/main and
// b/main alternating by age), then a high-priority b/urgent first.
func queues(t testing.TB) *queue.Manager {
	m := queue.NewManager()
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("gpu").Obj())
	add := func(name, ns, lq string, age time.Duration, prio int32) {
		w := utiltesting.MakeWorkload(name, ns).Queue(lq).Created(age).Priority(prio).Request(1, "cpu", "1").
			Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", 0).Obj()
		w.Status.Conditions[0].Message = "waits for " + name
		if err := m.AddOrUpdateWorkload(w, "gpu"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		ns := []string{"a", "b"}[i%2]
		add(fmt.Sprintf("%s%d", ns, i/2), ns, "main", time.Duration(i)*time.Second, 0)
	}
	add("urgent", "b", "main", 10*time.Second, 5)
	return m
}

func localQueueOf(_ context.Context, ns, name string) (berthv1alpha1.ClusterQueueReference, error) {
	if name == "main" {
		return "gpu", nil
	}
	return "", apierrors.NewNotFound(schema.GroupResource{Group: berthv1alpha1.GroupVersion.Group, Resource: "localqueues"}, name)
}

func get(t *testing.T, h http.Handler, path string, into any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
		t.Fatalf("%s: %v: %s", path, err, rec.Body.String())
	}
	return rec.Code
}

type row struct {
	Key      string
	CQ, LQ   int32
	Priority int32
}

func rows(s *visibilityv1alpha1.PendingWorkloadsSummary) []row {
	out := []row{}
	for _, it := range s.Items {
		out = append(out, row{it.Namespace + "/" + it.Name, it.PositionInClusterQueue, it.PositionInLocalQueue, it.Priority})
	}
	return out
}

func TestPendingWorkloads(t *testing.T) {
	h := NewHandler(queues(t), localQueueOf, func() bool { return true }, nil)
	prefix := "/apis/visibility.berth.dev/v1alpha1"
	cases := map[string]struct {
		path           string
		want           []row
		wantCQ, wantLQ int32
	}{
		"a ClusterQueue in order, positions from 1": {
			path:   prefix + "/clusterqueues/gpu/pendingworkloads",
			want:   []row{{"b/urgent", 1, 1, 5}, {"a/a0", 2, 1, 0}, {"b/b0", 3, 2, 0}, {"a/a1", 4, 2, 0}, {"b/b1", 5, 3, 0}, {"a/a2", 6, 3, 0}},
			wantCQ: 6,
		},
		"a page keeps the LocalQueue positions of what comes before it": {
			path:   prefix + "/clusterqueues/gpu/pendingworkloads?offset=3&limit=2",
			want:   []row{{"a/a1", 4, 2, 0}, {"b/b1", 5, 3, 0}},
			wantCQ: 6,
		},
		"a page past the end is empty": {
			path: prefix + "/clusterqueues/gpu/pendingworkloads?offset=6", want: []row{}, wantCQ: 6,
		},
		"a LocalQueue: its own workloads, positions in the ClusterQueue, the others counted": {
			path:   prefix + "/namespaces/a/localqueues/main/pendingworkloads",
			want:   []row{{"a/a0", 2, 1, 0}, {"a/a1", 4, 2, 0}, {"a/a2", 6, 3, 0}},
			wantCQ: 6, wantLQ: 3,
		},
		"a LocalQueue's page": {
			path:   prefix + "/namespaces/b/localqueues/main/pendingworkloads?offset=1&limit=1",
			want:   []row{{"b/b0", 3, 2, 0}},
			wantCQ: 6, wantLQ: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := &visibilityv1alpha1.PendingWorkloadsSummary{}
			if code := get(t, h, tc.path, got); code != http.StatusOK {
				t.Fatalf("code %d", code)
			}
			if diff := cmp.Diff(tc.want, rows(got)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if got.PendingInClusterQueue != tc.wantCQ || got.PendingInLocalQueue != tc.wantLQ || got.ClusterQueue != "gpu" {
				t.Errorf("counts %d, %d of %q; want %d, %d of gpu", got.PendingInClusterQueue, got.PendingInLocalQueue, got.ClusterQueue, tc.wantCQ, tc.wantLQ)
			}
			if got.Kind != "PendingWorkloadsSummary" || got.APIVersion != "visibility.berth.dev/v1alpha1" {
				t.Errorf("kind %s/%s", got.APIVersion, got.Kind)
			}
			for _, it := range got.Items {
				if it.Message != "waits for "+it.Name || it.LocalQueueName != "main" {
					t.Errorf("%s: message %q, localQueueName %q", it.Name, it.Message, it.LocalQueueName)
				}
			}
		})
	}
}

func TestPendingWorkloadsRefusals(t *testing.T) {
	prefix := "/apis/visibility.berth.dev/v1alpha1"
	cases := map[string]struct {
		path     string
		leads    bool
		wantCode int
		wantMsg  string
	}{
		"an unknown ClusterQueue":      {path: prefix + "/clusterqueues/nope/pendingworkloads", leads: true, wantCode: 404, wantMsg: `clusterqueues.berth.dev "nope" not found`},
		"an unknown LocalQueue":        {path: prefix + "/namespaces/a/localqueues/nope/pendingworkloads", leads: true, wantCode: 404, wantMsg: `localqueues.berth.dev "nope" not found`},
		"a limit that is not a number": {path: prefix + "/clusterqueues/gpu/pendingworkloads?limit=ten", leads: true, wantCode: 400, wantMsg: `limit: "ten" is not a whole number from 1 to 10000`},
		"a negative offset":            {path: prefix + "/clusterqueues/gpu/pendingworkloads?offset=-1", leads: true, wantCode: 400, wantMsg: `offset: "-1"`},
		"a replica that does not lead": {path: prefix + "/clusterqueues/gpu/pendingworkloads", wantCode: 503, wantMsg: "does not lead"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := NewHandler(queues(t), localQueueOf, func() bool { return tc.leads }, nil)
			st := &metav1.Status{}
			if code := get(t, h, tc.path, st); code != tc.wantCode || int(st.Code) != tc.wantCode {
				t.Errorf("code %d (status %d), want %d", code, st.Code, tc.wantCode)
			}
			if !contains(st.Message, tc.wantMsg) {
				t.Errorf("message %q, want it to say %q", st.Message, tc.wantMsg)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestDiscovery: kubectl and the API server's aggregator find the two
// subresources, read-only.
func TestDiscovery(t *testing.T) {
	h := NewHandler(queues(t), localQueueOf, func() bool { return true }, nil)
	list := &metav1.APIResourceList{}
	if code := get(t, h, "/apis/visibility.berth.dev/v1alpha1", list); code != 200 {
		t.Fatalf("code %d", code)
	}
	var got []string
	for _, r := range list.APIResources {
		got = append(got, fmt.Sprintf("%s namespaced=%v %v", r.Name, r.Namespaced, r.Verbs))
	}
	want := []string{"clusterqueues/pendingworkloads namespaced=false [get]", "localqueues/pendingworkloads namespaced=true [get]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	group := &metav1.APIGroup{}
	if code := get(t, h, "/apis/visibility.berth.dev", group); code != 200 || group.PreferredVersion.GroupVersion != "visibility.berth.dev/v1alpha1" {
		t.Errorf("group: code %d, %+v", code, group)
	}
}

// BenchmarkFirstPage is the controller's side of a first page of 100 on a
// ClusterQueue of 50,000 waiting workloads, from the request to the JSON.
func BenchmarkFirstPage(b *testing.B) {
	m := queue.NewManager()
	m.AddOrUpdateClusterQueue(utiltesting.MakeClusterQueue("gpu").Obj())
	for i := range 50_000 {
		w := utiltesting.MakeWorkload(fmt.Sprintf("w%d", i), fmt.Sprintf("ns%d", i%100)).Queue("main").
			Created(time.Duration(i)*time.Millisecond).Priority(int32(i%7)).Request(1, "cpu", fmt.Sprint(1+i%5)).Obj()
		if err := m.AddOrUpdateWorkload(w, "gpu"); err != nil {
			b.Fatal(err)
		}
	}
	h := NewHandler(m, localQueueOf, func() bool { return true }, nil)
	for _, path := range []string{
		"/apis/visibility.berth.dev/v1alpha1/clusterqueues/gpu/pendingworkloads?limit=100",
		"/apis/visibility.berth.dev/v1alpha1/namespaces/ns7/localqueues/main/pendingworkloads?limit=100",
	} {
		b.Run(map[bool]string{true: "clusterqueue", false: "localqueue"}[len(path) < 90], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != 200 {
					b.Fatalf("code %d", rec.Code)
				}
			}
		})
	}
}
