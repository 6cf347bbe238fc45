package jobframework

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// unlabelledReader holds namespace "team" (labelled managed=true), "other",
// in "team" the LocalQueues named in queues, and objs.
func unlabelledReader(t testing.TB, queues []string, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs = append(objs,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"managed": "true"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
	)
	for _, q := range queues {
		objs = append(objs, &berthv1alpha1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: q, Namespace: "team"}})
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// TestUnlabelledQueue: a new object without the queue label goes to its
// namespace's default LocalQueue, only in the managed namespaces, and
// never when a job Berth holds controls it. Its owner references are its
// creator's to write: one naming a job that is not there, not held, of
// another UID or of a kind not enabled, lets it skip nothing.
func TestUnlabelledQueue(t *testing.T) {
	managed := labels.SelectorFromSet(labels.Set{"managed": "true"})
	job := func(name, uid, queue string, owner ...metav1.OwnerReference) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", UID: types.UID(uid), OwnerReferences: owner}}
		if queue != "" {
			j.Labels = map[string]string{berthv1alpha1.QueueNameLabel: queue}
		}
		return j
	}
	ref := func(kind, name, uid string) metav1.OwnerReference {
		apiVersion := "batch/v1"
		if kind != "Job" {
			apiVersion = "v1"
		}
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}
	}
	owners := []client.Object{
		job("queued", "u-queued", "main"),
		job("free", "u-free", ""),
		// Each claims the other: the walk up stops.
		job("a", "u-a", "", ref("Job", "b", "u-b")),
		job("b", "u-b", "", ref("Job", "a", "u-a")),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "team", UID: "u-cm"}},
	}
	defaulted := map[string]string{berthv1alpha1.QueueNameLabel: "default"}
	enabled := []string{fakeIntegration.Name}
	cases := map[string]struct {
		ns, queue  string
		owner      *metav1.OwnerReference
		manage     bool
		frameworks []string
		// deployment makes the new object a Deployment, not a pod.
		deployment bool
		wantQueue  string
		wantHeld   bool
		wantLabels map[string]string
	}{
		"the default LocalQueue":               {ns: "team", queue: "default", wantQueue: "default", wantHeld: true, wantLabels: defaulted},
		"no default LocalQueue":                {ns: "team", queue: "main"},
		"no default, held anyway":              {ns: "team", queue: "main", manage: true, wantHeld: true},
		"a namespace the selector leaves":      {ns: "other", queue: "default", manage: true},
		"a part of a queued Job":               {ns: "team", queue: "default", owner: ptr.To(ref("Job", "queued", "u-queued")), frameworks: enabled},
		"a part of a Job held without queue":   {ns: "team", queue: "main", manage: true, owner: ptr.To(ref("Job", "free", "u-free")), frameworks: enabled},
		"a part of a Job in an ownership loop": {ns: "team", queue: "main", manage: true, owner: ptr.To(ref("Job", "a", "u-a")), frameworks: enabled},
		"naming a Job that is not there":       {ns: "team", queue: "default", owner: ptr.To(ref("Job", "gone", "u-gone")), frameworks: enabled, wantQueue: "default", wantHeld: true, wantLabels: defaulted},
		"naming a queued Job, another UID":     {ns: "team", queue: "default", owner: ptr.To(ref("Job", "queued", "u-other")), frameworks: enabled, wantQueue: "default", wantHeld: true, wantLabels: defaulted},
		"a part of a Job Berth does not hold":  {ns: "team", queue: "default", owner: ptr.To(ref("Job", "free", "u-free")), frameworks: enabled, wantQueue: "default", wantHeld: true, wantLabels: defaulted},
		"made by a kind Berth knows not":       {ns: "team", queue: "default", owner: ptr.To(ref("ConfigMap", "cm", "u-cm")), frameworks: enabled, wantQueue: "default", wantHeld: true, wantLabels: defaulted},
		"a part of a Job of a kind disabled":   {ns: "team", queue: "default", owner: ptr.To(ref("Job", "queued", "u-queued")), wantQueue: "default", wantHeld: true, wantLabels: defaulted},
	}
	testIntegration(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := unlabelledReader(t, []string{tc.queue}, owners...)
			var obj client.Object = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: tc.ns}}
			if tc.deployment {
				obj = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: tc.ns}}
			}
			if tc.owner != nil {
				obj.SetOwnerReferences([]metav1.OwnerReference{*tc.owner})
			}
			opts := Options{ManagedNamespaces: managed, ManageJobsWithoutQueueName: tc.manage, Frameworks: tc.frameworks}
			queue, held, err := opts.unlabelledQueue(t.Context(), c, obj)
			if err != nil {
				t.Fatal(err)
			}
			if queue != tc.wantQueue || held != tc.wantHeld || fmt.Sprint(obj.GetLabels()) != fmt.Sprint(tc.wantLabels) {
				t.Errorf("got queue %q, held %v, labels %v; want %q, %v, %v", queue, held, obj.GetLabels(), tc.wantQueue, tc.wantHeld, tc.wantLabels)
			}
		})
	}
}

// TestHeldOwnerReadsWhatTheCacheHasNotSeen: a part created a moment after
// its job (a LeaderWorkerSet group's worker StatefulSet, after its leader
// pod) is judged by the job the API server holds when the webhook's cache
// has not seen it yet, or holds the one its name had before.
func TestHeldOwnerReadsWhatTheCacheHasNotSeen(t *testing.T) {
	testIntegration(t)
	queued := func(uid string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "queued", Namespace: "team", UID: types.UID(uid),
			Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}}}
	}
	live := unlabelledReader(t, nil, queued("u-new"))
	opts := Options{Frameworks: []string{fakeIntegration.Name}}
	for name, cached := range map[string]client.Reader{
		"not in the cache yet":              unlabelledReader(t, nil),
		"the cache holds the one before it": unlabelledReader(t, nil, queued("u-old")),
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "batch/v1", Kind: "Job", Name: "queued", UID: "u-new", Controller: ptr.To(true)}}}}
			if held, err := opts.HeldOwner(t.Context(), freshReader{cached: cached, live: live}, pod); err != nil || !held {
				t.Errorf("HeldOwner: %v (%v), want the queued Job the API server has found", held, err)
			}
			if held, err := opts.HeldOwner(t.Context(), cached, pod); err != nil || held {
				t.Errorf("HeldOwner from the cache alone: %v (%v), want false, as the cache sees it", held, err)
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
	c := unlabelledReader(b, queues)
	opts := Options{ManagedNamespaces: labels.SelectorFromSet(labels.Set{"managed": "true"})}
	for b.Loop() {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "team"}}
		if _, _, err := opts.unlabelledQueue(b.Context(), c, job); err != nil {
			b.Fatal(err)
		}
	}
}

// testIntegration registers, once, the fake integration of batch/v1 Jobs,
// so that the pods a Job controls are a part of an integrated job.
func testIntegration(t *testing.T) {
	t.Helper()
	if _, ok := Lookup(fakeIntegration.Name); !ok {
		Register(fakeIntegration)
	}
}
