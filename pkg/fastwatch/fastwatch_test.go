package fastwatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// sample is a Workload as the API server sends it once admitted: spec,
// admission, conditions and managed fields.
func sample(name string) *berthv1alpha1.Workload {
	wl := utiltesting.MakeWorkload(name, "team-a").Queue("main").Priority(100).Request(2, "cpu", "1", "nvidia.com/gpu", "1").
		AdmittedIn("cq", "h100").Obj()
	wl.Kind, wl.APIVersion = "Workload", berthv1alpha1.GroupVersion.String()
	wl.UID, wl.ResourceVersion = "6a1f0a3e-1b0c-4d5e-9f10-2a3b4c5d6e7f", "4242"
	wl.Labels = map[string]string{"berth.dev/queue-name": "main"}
	// The three writers of a workload that ran: its creator, the
	// admission and the Finished condition.
	entry := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "berth.dev/v1alpha1",
			Time: &metav1.Time{Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(fields), Subresource: subresource,
		}
	}
	condition := func(typ string) string {
		return `"k:{\"type\":\"` + typ + `\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}`
	}
	wl.ManagedFields = []metav1.ManagedFieldsEntry{
		entry("job", "", `{"f:metadata":{"f:labels":{".":{},"f:berth.dev/queue-name":{}}},"f:spec":{".":{},"f:active":{},`+
			`"f:podSets":{".":{},"k:{\"name\":\"main\"}":{".":{},"f:count":{},"f:name":{},"f:template":{".":{},"f:metadata":{},`+
			`"f:spec":{".":{},"f:containers":{".":{},"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{},`+
			`"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{}}}}},"f:restartPolicy":{}}}}},"f:priority":{},"f:queueName":{}}}`),
		entry("berth", "status", `{"f:status":{".":{},"f:admission":{".":{},"f:clusterQueue":{},"f:podSetAssignments":{".":{},`+
			`"k:{\"name\":\"main\"}":{".":{},"f:count":{},"f:flavors":{".":{},"f:cpu":{}},"f:name":{},"f:resourceUsage":{".":{},"f:cpu":{}}}}},`+
			`"f:conditions":{".":{},`+condition("Admitted")+`,`+condition("QuotaReserved")+`}}}`),
		entry("job", "status", `{"f:status":{"f:conditions":{`+condition("Finished")+`}}}`),
	}
	return wl
}

// line is one event of a JSON watch stream, as the API server writes it.
func line(t testing.TB, typ watch.EventType, obj any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": typ, "object": obj})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// clientGoEvents decodes a stream the way client-go's REST client does.
func clientGoEvents(t testing.TB, data string) []watch.Event {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	frames := info.StreamSerializer.NewFrameReader(io.NopCloser(strings.NewReader(data)))
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), codecs.DecoderToVersion(info.Serializer, berthv1alpha1.GroupVersion))
	var out []watch.Event
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, watch.Event{Type: typ, Object: obj})
	}
}

func events(s *stream) []watch.Event {
	var out []watch.Event
	for ev := range s.ResultChan() {
		out = append(out, ev)
	}
	return out
}

func newWorkloadStream(data string) *stream {
	return For[berthv1alpha1.Workload]("workloads").open(io.NopCloser(strings.NewReader(data))).(*stream)
}

// fullSample is sample with a pod template that uses the shapes of JSON
// the core API has: Go-embedded structs (a volume's source, a probe's
// handler), int-or-strings, quantities, times and pointers to ints.
func fullSample(name string) *berthv1alpha1.Workload {
	wl := sample(name)
	wl.Annotations = map[string]string{"team": "vision"}
	wl.Finalizers = []string{"berth.dev/resource-in-use"}
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: "0f1e2d3c", Controller: ptr.To(true)}}
	wl.CreationTimestamp = metav1.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	spec := &wl.Spec.PodSets[0].Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("10Gi"))},
	}}}
	spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}
	spec.NodeSelector = map[string]string{"gpu": "h100"}
	spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	c := &spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
		PeriodSeconds: 5,
	}
	c.Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1.5Gi")}
	return wl
}

func TestDecodesAsClientGoDoes(t *testing.T) {
	bookmark := &berthv1alpha1.Workload{TypeMeta: metav1.TypeMeta{Kind: "Workload", APIVersion: berthv1alpha1.GroupVersion.String()}}
	bookmark.ResourceVersion = "4243"
	bookmark.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	data := line(t, watch.Added, fullSample("a")) + line(t, watch.Modified, fullSample("b")) +
		line(t, watch.Bookmark, bookmark) + line(t, watch.Deleted, fullSample("a"))

	want := clientGoEvents(t, data)
	got := events(newWorkloadStream(data))
	if len(got) != len(want) {
		t.Fatalf("got %d events, client-go decodes %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Type != want[i].Type {
			t.Errorf("event %d: type %s, client-go says %s", i, got[i].Type, want[i].Type)
		}
		if !equality.Semantic.DeepEqual(got[i].Object, want[i].Object) {
			t.Errorf("event %d differs from client-go's (-client-go +fastwatch):\n%s", i, cmp.Diff(want[i].Object, got[i].Object))
		}
	}
}

// queueSamples are a ClusterQueue and a LocalQueue with every field set,
// status and managed fields included.
func queueSamples() (*berthv1alpha1.ClusterQueue, *berthv1alpha1.LocalQueue) {
	meta := func(kind, namespace, name string) (metav1.TypeMeta, metav1.ObjectMeta) {
		at := metav1.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		return metav1.TypeMeta{Kind: kind, APIVersion: berthv1alpha1.GroupVersion.String()}, metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: "6a1f0a3e", ResourceVersion: "77", Generation: 3, CreationTimestamp: at,
			Labels: map[string]string{"team": "vision"}, Finalizers: []string{"berth.dev/resource-in-use"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "berth", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "berth.dev/v1alpha1", Time: &at, FieldsType: "FieldsV1", Subresource: "status",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{".":{},"f:pendingWorkloads":{}}}`)}},
		}
	}
	conditions := []metav1.Condition{{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, ObservedGeneration: 3,
		LastTransitionTime: metav1.Date(2026, 11, 30, 9, 0, 1, 0, time.UTC), Reason: berthv1alpha1.ReasonReady, Message: "Can admit new workloads"}}
	usage := []berthv1alpha1.ResourceUsage{{Name: "nvidia.com/gpu", Total: resource.MustParse("24"), Borrowed: resource.MustParse("8")}}

	cq := &berthv1alpha1.ClusterQueue{
		Spec: berthv1alpha1.ClusterQueueSpec{
			ResourceGroups: berthv1alpha1.ResourceGroups{{
				CoveredResources: []corev1.ResourceName{"cpu", "nvidia.com/gpu"},
				Flavors: []berthv1alpha1.FlavorQuotas{{Name: "h100", Resources: []berthv1alpha1.ResourceQuota{
					{Name: "cpu", NominalQuota: resource.MustParse("96"), BorrowingLimit: ptr.To(resource.MustParse("32")), LendingLimit: ptr.To(resource.MustParse("500m"))},
					{Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("16")},
				}}},
			}},
			CohortName:        "research",
			QueueingStrategy:  berthv1alpha1.BestEffortFIFO,
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"vision", "nlp"}}}},
			Preemption: berthv1alpha1.ClusterQueuePreemption{
				WithinClusterQueue: berthv1alpha1.PreemptionPolicyLowerPriority, ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny,
				BorrowWithinCohort: berthv1alpha1.BorrowWithinCohort{Policy: berthv1alpha1.PreemptionPolicyLowerPriority, MaxPriorityThreshold: ptr.To[int32](100)},
			},
			FlavorFungibility: berthv1alpha1.FlavorFungibility{WhenCanBorrow: berthv1alpha1.MayStopSearch, WhenCanPreempt: berthv1alpha1.TryNextFlavor},
			StopPolicy:        berthv1alpha1.None,
			SchedulerName:     "berth-scheduler",
		},
		Status: berthv1alpha1.ClusterQueueStatus{
			Conditions: conditions, PendingWorkloads: 7, ReservingWorkloads: 3, AdmittedWorkloads: 3,
			FlavorsReservation: []berthv1alpha1.FlavorUsage{{Name: "h100", Resources: usage}},
			FlavorsUsage:       []berthv1alpha1.FlavorUsage{{Name: "h100", Resources: usage}},
		},
	}
	cq.TypeMeta, cq.ObjectMeta = meta("ClusterQueue", "", "team-a")
	lq := &berthv1alpha1.LocalQueue{
		Spec: berthv1alpha1.LocalQueueSpec{ClusterQueue: "team-a", StopPolicy: berthv1alpha1.Hold},
		Status: berthv1alpha1.LocalQueueStatus{
			Conditions: conditions, PendingWorkloads: 2, ReservingWorkloads: 1, AdmittedWorkloads: 1,
			FlavorsUsage: []berthv1alpha1.LocalQueueFlavorUsage{{Name: "h100", Resources: usage}},
		},
	}
	lq.TypeMeta, lq.ObjectMeta = meta("LocalQueue", "team-a", "main")
	return cq, lq
}

// The queues' watches decode as client-go does too.
func TestQueuesDecodeAsClientGoDoes(t *testing.T) {
	cq, lq := queueSamples()
	for _, tc := range []struct {
		obj  runtime.Object
		kind Kind
	}{
		{cq, For[berthv1alpha1.ClusterQueue]("clusterqueues")},
		{lq, For[berthv1alpha1.LocalQueue]("localqueues")},
	} {
		data := line(t, watch.Added, tc.obj) + line(t, watch.Modified, tc.obj)
		want := clientGoEvents(t, data)
		got := events(tc.kind.open(io.NopCloser(strings.NewReader(data))).(*stream))
		if len(got) != len(want) {
			t.Fatalf("%T: got %d events, client-go decodes %d", tc.obj, len(got), len(want))
		}
		for i := range want {
			if !equality.Semantic.DeepEqual(got[i], want[i]) {
				t.Errorf("%T: event %d differs from client-go's (-client-go +fastwatch):\n%s", tc.obj, i, cmp.Diff(want[i], got[i]))
			}
		}
	}
}

// eventful is a kind whose Object field json v2 would decode otherwise than
// the API machinery: its numbers as float64.
type eventful struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Timeout time.Duration  `json:"timeout"`
		Extra   map[string]any `json:"extra"`
	} `json:"spec"`
}

func (e *eventful) DeepCopyObject() runtime.Object { c := *e; return &c }

func TestForRefusesKindsJSONv2DecodesOtherwise(t *testing.T) {
	defer func() {
		got := fmt.Sprint(recover())
		if !strings.Contains(got, "Timeout: a time.Duration") {
			t.Errorf("For panicked with %q, want it to name the time.Duration field", got)
		}
	}()
	For[eventful]("eventfuls")
}

func TestDecodesAsV1(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[berthv1alpha1.Workload](), ""},
		{reflect.TypeFor[metav1.Status](), ""},
		{reflect.TypeFor[struct{ D time.Duration }](), "D: a time.Duration"},
		{reflect.TypeFor[struct{ M map[string][]any }](), "M: an interface (interface {})"},
		{reflect.TypeFor[struct {
			D time.Duration `json:"-"`
			d time.Duration
		}](), ""},
	} {
		err := decodesAsV1(tc.typ, map[reflect.Type]bool{})
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && !strings.HasSuffix(got, tc.want)) {
			t.Errorf("decodesAsV1(%s) = %v, want %q", tc.typ, err, tc.want)
		}
	}
}

func TestErrorEventCarriesTheStatus(t *testing.T) {
	expired := apierrors.NewResourceExpired("too old resource version: 1 (4242)").ErrStatus
	expired.Kind, expired.APIVersion = "Status", "v1"
	got := events(newWorkloadStream(line(t, watch.Error, expired)))
	if len(got) != 1 || got[0].Type != watch.Error {
		t.Fatalf("got %v, want one error event", got)
	}
	err := apierrors.FromObject(got[0].Object)
	if !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "too old resource version") {
		t.Errorf("got %v, want the expired status (the reflector lists again on it)", err)
	}
}

func TestLinesLongerThanTheBuffer(t *testing.T) {
	big := sample("big")
	big.Annotations = map[string]string{"note": strings.Repeat("x", 3*lineBuffer)}
	got := events(newWorkloadStream(line(t, watch.Added, sample("a")) + line(t, watch.Modified, big) + line(t, watch.Added, sample("c"))))
	if len(got) != 3 {
		t.Fatalf("got %d events, want 3", len(got))
	}
	names := []string{}
	for _, ev := range got {
		names = append(names, ev.Object.(*berthv1alpha1.Workload).Name)
	}
	if diff := cmp.Diff([]string{"a", "big", "c"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if n := len(got[1].Object.(*berthv1alpha1.Workload).Annotations["note"]); n != 3*lineBuffer {
		t.Errorf("the long annotation has %d bytes, want %d", n, 3*lineBuffer)
	}
}

func TestUndecodableEventEndsTheWatchWithAnError(t *testing.T) {
	cases := map[string]string{
		"not JSON":     "{\"type\":\"ADDED\",\"object\":{\"metadata\":\n",
		"unknown type": `{"type":"RENAMED","object":{}}` + "\n",
		"no object":    `{"type":"ADDED"}` + "\n",
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			got := events(newWorkloadStream(line(t, watch.Added, sample("a")) + bad + line(t, watch.Added, sample("b"))))
			if len(got) != 2 || got[0].Type != watch.Added || got[1].Type != watch.Error {
				t.Fatalf("got %v, want the first event, then an error, then the end", got)
			}
			if err := apierrors.FromObject(got[1].Object); !apierrors.IsInternalError(err) {
				t.Errorf("got %v, want an internal error", err)
			}
		})
	}
}

func TestTruncatedStreamEndsQuietly(t *testing.T) {
	full := line(t, watch.Added, sample("a"))
	got := events(newWorkloadStream(full + full[:len(full)/2]))
	if len(got) != 1 || got[0].Type != watch.Added {
		t.Errorf("got %v, want the whole event only: the reflector watches again", got)
	}
}

func TestStopEndsAWatchThatWaits(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	s := For[berthv1alpha1.Workload]("workloads").open(r).(*stream)
	go func() { _, _ = io.WriteString(w, line(t, watch.Added, sample("a"))) }()
	if ev := <-s.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("got %v, want the added event", ev)
	}
	s.Stop()
	select {
	case ev, ok := <-s.ResultChan():
		if ok {
			t.Errorf("got %v after Stop, want the channel closed", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the result channel is still open 10s after Stop")
	}
}

// BenchmarkDecode compares client-go's decoding of a Workload watch stream
// with this package's, per event.
func BenchmarkDecode(b *testing.B) {
	const n = 1000
	var buf bytes.Buffer
	for i := range n {
		buf.WriteString(line(b, watch.Modified, sample(fmt.Sprintf("wl-%d", i))))
	}
	data := buf.String()
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(clientGoEvents(b, data)) != n {
				b.Fatal("events lost")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
	b.Run("fastwatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(events(newWorkloadStream(data))) != n {
				b.Fatal("events lost")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
	b.Run("fastwatch-without-managed-fields", func(b *testing.B) {
		k := For[berthv1alpha1.Workload]("workloads").WithoutManagedFields()
		b.ReportAllocs()
		for b.Loop() {
			w := k.open(io.NopCloser(strings.NewReader(data)))
			got := 0
			for range w.ResultChan() {
				got++
			}
			if got != n {
				b.Fatal("events lost")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
}

func TestCancelledContextEndsQuietly(t *testing.T) {
	r, w := io.Pipe()
	s := For[berthv1alpha1.Workload]("workloads").open(r).(*stream)
	go func() {
		_, _ = io.WriteString(w, line(t, watch.Added, sample("a")))
		// What an HTTP body returns once its request's context is done.
		w.CloseWithError(fmt.Errorf("reading the body: %w", context.Canceled))
	}()
	if got := events(s); len(got) != 1 || got[0].Type != watch.Added {
		t.Errorf("got %v, want the added event and no error: the watch was cancelled, not broken", got)
	}
}
