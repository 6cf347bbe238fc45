package gang

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

func TestCountProgress(t *testing.T) {
	self := worker("self").Obj()
	sized := worker("self").Obj()
	sized.Annotations = map[string]string{podset.SizeAnnotation: "4"}
	cases := map[string]struct {
		pod     *corev1.Pod
		members []*corev1.Pod
		waiting sets.Set[types.UID]
		want    progress
	}{
		"the size annotation counts pods not created yet": {
			pod:     sized,
			members: []*corev1.Pod{sized, worker("w").Obj()},
			waiting: sets.New[types.UID]("w"),
			want:    progress{Expected: 4, Placed: 2},
		},
		"a running gang waits only for its live members": {
			pod:     sized,
			members: []*corev1.Pod{sized, worker("bound").Node("n1").Obj()},
			want:    progress{Expected: 2, Placed: 2},
		},
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
		"gated pods, which an elastic job added and which wait for quota, are not waited for": {
			members: []*corev1.Pod{self, worker("bound").Node("n1").Obj(), gated("more")},
			want:    progress{Expected: 2, Placed: 2},
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
			pod := tc.pod
			if pod == nil {
				pod = self
			}
			got := countProgress(pod, tc.members, tc.waiting)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("countProgress() (-want +got):\n%s", diff)
			}
		})
	}
}

// gated is a worker that still carries a scheduling gate.
func gated(name string) *corev1.Pod {
	p := worker(name).Obj()
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "berth.dev/elastic"}}
	return p
}
