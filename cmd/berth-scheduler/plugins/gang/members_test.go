package gang

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestCountProgress(t *testing.T) {
	self := worker("self").Obj()
	cases := map[string]struct {
		members []*corev1.Pod
		waiting sets.Set[types.UID]
		want    progress
	}{
		"alone, not yet in the lister": {
			want: progress{Expected: 1, Placed: 1},
		},
		"alone, in the lister": {
			members: []*corev1.Pod{self},
			want:    progress{Expected: 1, Placed: 1},
		},
		"one bound, one waiting, one without a node": {
			members: []*corev1.Pod{self, worker("bound").Node("n1").Obj(), worker("w").Obj(), worker("new").Obj()},
			waiting: sets.New[types.UID]("w"),
			want:    progress{Expected: 4, Placed: 3},
		},
		"finished and deleting pods are ignored": {
			members: []*corev1.Pod{
				self,
				worker("ok").Phase(corev1.PodSucceeded).Node("n1").Obj(),
				worker("ko").Phase(corev1.PodFailed).Obj(),
				worker("gone").Terminating().Obj(),
			},
			want: progress{Expected: 1, Placed: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := countProgress(self, tc.members, tc.waiting)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("countProgress() (-want +got):\n%s", diff)
			}
		})
	}
}
