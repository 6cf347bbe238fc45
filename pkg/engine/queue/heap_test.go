package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

type item struct {
	key  string
	rank int
}

func TestHeap(t *testing.T) {
	type op struct {
		push   *item
		remove string
	}
	cases := map[string]struct {
		ops  []op
		want []string
	}{
		"pops in order": {
			ops:  []op{{push: &item{"c", 3}}, {push: &item{"a", 1}}, {push: &item{"b", 2}}},
			want: []string{"a", "b", "c"},
		},
		"an update moves the item": {
			ops:  []op{{push: &item{"a", 1}}, {push: &item{"b", 2}}, {push: &item{"a", 3}}},
			want: []string{"b", "a"},
		},
		"a removal keeps the rest in order": {
			ops: []op{
				{push: &item{"a", 1}}, {push: &item{"b", 2}}, {push: &item{"c", 3}}, {push: &item{"d", 4}},
				{remove: "b"}, {remove: "missing"},
			},
			want: []string{"a", "c", "d"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHeap(func(i *item) string { return i.key }, func(a, b *item) bool { return a.rank < b.rank })
			for _, o := range tc.ops {
				if o.push != nil {
					h.pushOrUpdate(o.push)
				} else {
					h.remove(o.remove)
				}
			}
			var got []string
			for h.len() > 0 {
				top, _ := h.pop()
				if _, ok := h.get(top.key); ok {
					t.Errorf("%s still indexed after its pop", top.key)
				}
				got = append(got, top.key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pop order (-want +got):\n%s", diff)
			}
		})
	}
}
