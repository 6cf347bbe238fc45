package fastwatch

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/watch"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

func sharingWorkloads() Kind {
	return Sharing[corev1.PodSpec](For[berthv1alpha1.Workload]("workloads").WithoutManagedFields(), 8)
}

// Workloads whose pod specs are written the same share one, and every
// one decodes as client-go decodes it.
func TestSharingDecodesAsClientGoDoes(t *testing.T) {
	other := fullSample("c")
	other.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	data := line(t, watch.Added, fullSample("a")) + line(t, watch.Added, fullSample("b")) + line(t, watch.Added, other)

	want := clientGoEvents(t, data)
	got := events(sharingWorkloads().open(io.NopCloser(strings.NewReader(data))).(*stream))
	if len(got) != len(want) {
		t.Fatalf("got %d events, client-go decodes %d", len(got), len(want))
	}
	for i := range want {
		want[i].Object.(*berthv1alpha1.Workload).ManagedFields = nil // WithoutManagedFields
		if !equality.Semantic.DeepEqual(got[i].Object, want[i].Object) {
			t.Errorf("event %d differs from client-go's (-client-go +fastwatch):\n%s", i, cmp.Diff(want[i].Object, got[i].Object))
		}
	}
	container := func(i int) *corev1.Container {
		return &got[i].Object.(*berthv1alpha1.Workload).Spec.PodSets[0].Template.Spec.Containers[0]
	}
	if container(0) != container(1) {
		t.Error("two Workloads with the same pod spec hold a container each, want one between them")
	}
	if container(0) == container(2) {
		t.Error("Workloads of different pod specs share a container")
	}
}

// The table never holds more than its capacity, and what it forgets is
// decoded again.
func TestSharingForgetsWhenFull(t *testing.T) {
	table := &sharedValues[corev1.PodSpec]{capacity: 2, values: map[string]corev1.PodSpec{}}
	opts := json.JoinOptions(lenient, json.WithUnmarshalers(json.UnmarshalFromFunc(table.unmarshal)))
	for round := range 2 {
		for i := range 3 {
			var ps berthv1alpha1.PodSet
			in := fmt.Sprintf(`{"name":"main","count":1,"template":{"spec":{"containers":[{"name":"c%d","image":"pause"}]}}}`, i)
			if err := json.Unmarshal([]byte(in), &ps, opts); err != nil {
				t.Fatal(err)
			}
			if name := ps.Template.Spec.Containers[0].Name; name != fmt.Sprintf("c%d", i) {
				t.Errorf("round %d, pod spec %d: decoded container %q", round, i, name)
			}
			if n := table.len(); n > 2 {
				t.Fatalf("the table holds %d pod specs, more than its capacity of 2", n)
			}
		}
	}
}

// BenchmarkCachedWorkloads reports the memory that 10,000 decoded
// Workloads of three pod specs (the benchmark scenario's classes) hold,
// with and without sharing their pod specs.
func BenchmarkCachedWorkloads(b *testing.B) {
	const n = 10000
	var buf bytes.Buffer
	for i := range n {
		wl := sample(fmt.Sprintf("wl-%d", i))
		wl.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(100*(1+i%3)), resource.DecimalSI)
		buf.WriteString(line(b, watch.Modified, wl))
	}
	data := buf.String()
	for _, k := range []struct {
		name string
		kind Kind
	}{
		{"own", For[berthv1alpha1.Workload]("workloads").WithoutManagedFields()},
		{"shared", Sharing[corev1.PodSpec](For[berthv1alpha1.Workload]("workloads").WithoutManagedFields(), 1024)},
	} {
		b.Run(k.name, func(b *testing.B) {
			var retained uint64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				got := events(k.kind.open(io.NopCloser(strings.NewReader(data))).(*stream))
				runtime.GC()
				runtime.ReadMemStats(&after)
				if len(got) != n {
					b.Fatal("events lost")
				}
				retained += after.HeapAlloc - before.HeapAlloc
				runtime.KeepAlive(got)
			}
			b.ReportMetric(float64(retained)/float64(b.N*n), "retained-B/workload")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
