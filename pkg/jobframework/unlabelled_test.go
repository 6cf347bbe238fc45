package jobframework

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// unlabelledReader holds namespace "team" (labelled managed=true), "other",
// and in "team" the LocalQueues named in queues.
func unlabelledReader(t testing.TB, queues ...string) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"managed": "true"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
	}
	for _, q := range queues {
		objs = append(objs, &berthv1alpha1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: q, Namespace: "team"}})
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// TestUnlabelledQueue: a new job without the queue label goes to its
// namespace's default LocalQueue, only in the managed namespaces, and
// never when it is a part of a job of an integrated kind.
func TestUnlabelledQueue(t *testing.T) {
	managed := labels.SelectorFromSet(labels.Set{"managed": "true"})
	partOf := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: kind, Name: "set", Controller: ptr.To(true)}}
	}
	cases := map[string]struct {
		ns, queue  string
		owners     []metav1.OwnerReference
		manage     bool
		wantQueue  string
		wantHeld   bool
		wantLabels map[string]string
	}{
		"the default LocalQueue":          {ns: "team", queue: "default", wantQueue: "default", wantHeld: true, wantLabels: map[string]string{berthv1alpha1.QueueNameLabel: "default"}},
		"no default LocalQueue":           {ns: "team", queue: "main"},
		"no default, held anyway":         {ns: "team", queue: "main", manage: true, wantHeld: true},
		"a namespace the selector leaves": {ns: "other", queue: "default", manage: true},
		"a part of a queued JobSet":       {ns: "team", queue: "default", owners: partOf("JobSet")},
		"made by a kind Berth knows not":  {ns: "team", queue: "default", owners: partOf("Pipeline"), wantQueue: "default", wantHeld: true, wantLabels: map[string]string{berthv1alpha1.QueueNameLabel: "default"}},
	}
	testIntegration(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := unlabelledReader(t, tc.queue)
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: tc.ns, OwnerReferences: tc.owners}}
			opts := Options{ManagedNamespaces: managed, ManageJobsWithoutQueueName: tc.manage}
			queue, held, err := opts.unlabelledQueue(t.Context(), c, job)
			if err != nil {
				t.Fatal(err)
			}
			if queue != tc.wantQueue || held != tc.wantHeld || fmt.Sprint(job.Labels) != fmt.Sprint(tc.wantLabels) {
				t.Errorf("got queue %q, held %v, labels %v; want %q, %v, %v", queue, held, job.Labels, tc.wantQueue, tc.wantHeld, tc.wantLabels)
			}
		})
	}
}

// BenchmarkUnlabelledQueue is what a default LocalQueue costs each new
// unlabelled job: the namespace's labels and its LocalQueues, read from the
// cache, with ten LocalQueues in the namespace.
func BenchmarkUnlabelledQueue(b *testing.B) {
	queues := []string{"default"}
	for i := range 9 {
		queues = append(queues, fmt.Sprintf("q%d", i))
	}
	c := unlabelledReader(b, queues...)
	opts := Options{ManagedNamespaces: labels.SelectorFromSet(labels.Set{"managed": "true"})}
	for b.Loop() {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "team"}}
		if _, _, err := opts.unlabelledQueue(b.Context(), c, job); err != nil {
			b.Fatal(err)
		}
	}
}

// testIntegration registers, once, an integration of the JobSet kind, so
// that a Job it owns is a part of an integrated job.
func testIntegration(t *testing.T) {
	t.Helper()
	const name = "test/jobset"
	if _, ok := Lookup(name); !ok {
		Register(&Integration{Name: name, GVK: schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}})
	}
}
