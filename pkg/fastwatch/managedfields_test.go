package fastwatch

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/watch"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

func TestCutManagedFields(t *testing.T) {
	const entries = `[{"manager":"berth","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Admitted\"}":{".":{}}}}}},{"manager":"x]}\"{"}]`
	cases := map[string]struct{ in, want string }{
		"between keys, as the API server sorts them": {
			in:   `{"type":"MODIFIED","object":{"kind":"Workload","metadata":{"labels":{"a":"b"},"managedFields":` + entries + `,"name":"a"},"spec":{}}}`,
			want: `{"type":"MODIFIED","object":{"kind":"Workload","metadata":{"labels":{"a":"b"},"name":"a"},"spec":{}}}`,
		},
		"first": {
			in:   `{"type":"ADDED","object":{"metadata":{"managedFields":` + entries + `,"name":"a"}}}`,
			want: `{"type":"ADDED","object":{"metadata":{"name":"a"}}}`,
		},
		"last": {
			in:   `{"object":{"metadata":{"name":"a","managedFields":` + entries + `}},"type":"ADDED"}`,
			want: `{"object":{"metadata":{"name":"a"}},"type":"ADDED"}`,
		},
		"alone": {
			in:   `{"type":"ADDED","object":{"metadata":{"managedFields":` + entries + `}}}`,
			want: `{"type":"ADDED","object":{"metadata":{}}}`,
		},
		"null": {
			in:   `{"type":"ADDED","object":{"metadata":{"managedFields":null,"name":"a"}}}`,
			want: `{"type":"ADDED","object":{"metadata":{"name":"a"}}}`,
		},
		"after the same key in a string and in a pod template": {
			in: `{"type":"ADDED","object":{"metadata":{"annotations":{"n":"\"managedFields\":[]"},"managedFields":` + entries +
				`,"name":"a"},"spec":{"podSets":[{"template":{"metadata":{"managedFields":[]}}}]}}}`,
			want: `{"type":"ADDED","object":{"metadata":{"annotations":{"n":"\"managedFields\":[]"},"name":"a"},` +
				`"spec":{"podSets":[{"template":{"metadata":{"managedFields":[]}}}]}}}`,
		},
		"only in a pod template": {
			in:   `{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"template":{"metadata":{"managedFields":[]}}}}}`,
			want: `{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"template":{"metadata":{"managedFields":[]}}}}}`,
		},
		"under another key of the event": {
			in:   `{"type":"ADDED","other":{"metadata":{"managedFields":[]}},"object":{"metadata":{"name":"a"}}}`,
			want: `{"type":"ADDED","other":{"metadata":{"managedFields":[]}},"object":{"metadata":{"name":"a"}}}`,
		},
		"spelt with a space": {
			in:   `{"type":"ADDED","object":{"metadata":{"managedFields" :[],"name":"a"}}}`,
			want: `{"type":"ADDED","object":{"metadata":{"managedFields" :[],"name":"a"}}}`,
		},
		"cut short": {
			in:   `{"type":"ADDED","object":{"metadata":{"managedFields":[{"manager":"berth"`,
			want: `{"type":"ADDED","object":{"metadata":{"managedFields":[{"manager":"berth"`,
		},
		"not a list": {
			in:   `{"type":"ADDED","object":{"metadata":{"managedFields":7}}}`,
			want: `{"type":"ADDED","object":{"metadata":{"managedFields":7}}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(cutManagedFields([]byte(tc.in))); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The events of a Kind without managed fields are what the cache's
// transform would leave of client-go's.
func TestWithoutManagedFieldsDecodesAsTheTransformLeavesIt(t *testing.T) {
	manyWriters := sample("b")
	manyWriters.ManagedFields = append(manyWriters.ManagedFields, sample("c").ManagedFields...)
	manyWriters.ManagedFields[1].Manager = "perf"
	data := line(t, watch.Added, sample("a")) + line(t, watch.Modified, manyWriters) + line(t, watch.Deleted, sample("a"))

	want := clientGoEvents(t, data)
	for _, ev := range want {
		ev.Object.(*berthv1alpha1.Workload).ManagedFields = nil
	}
	k := For[berthv1alpha1.Workload]("workloads").WithoutManagedFields()
	w := k.open(io.NopCloser(strings.NewReader(data)))
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !equality.Semantic.DeepEqual(got[i], want[i]) {
			t.Errorf("event %d (-client-go, stripped +fastwatch):\n%s", i, cmp.Diff(want[i], got[i]))
		}
	}
}

// BenchmarkCutManagedFields is the cost of the cut against the decoding it
// saves, per event.
func BenchmarkCutManagedFields(b *testing.B) {
	ev := []byte(line(b, watch.Modified, sample("wl")))
	buf := make([]byte, len(ev))
	b.Run("cut", func(b *testing.B) {
		for b.Loop() {
			copy(buf, ev)
			if bytes.Equal(cutManagedFields(buf), ev) {
				b.Fatal("nothing cut")
			}
		}
	})
	for _, cut := range []bool{false, true} {
		b.Run(fmt.Sprintf("decode/cut=%v", cut), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				copy(buf, ev)
				l := buf
				if cut {
					l = cutManagedFields(l)
				}
				if _, err := decode[berthv1alpha1.Workload](l, lenient); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
