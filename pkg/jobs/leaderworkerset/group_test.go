package leaderworkerset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobs/pod"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestPodsJoinTheirGroup holds pods as the pod integration does, with this
// package's joiner registered, and checks the group each is put in.
func TestPodsJoinTheirGroup(t *testing.T) {
	cases := map[string]struct {
		pod *corev1.Pod
		// wantGroup and wantCount are the group's label and count, "" for
		// none.
		wantGroup, wantCount string
	}{
		"a leader, its index from its name": {
			pod:       utiltesting.MakePod("infer-1", "ns").Queue("q").Label(nameLabel, "infer").Label(workerIndexLabel, "0").Annotation(sizeAnnotation, "4").Obj(),
			wantGroup: "infer-1", wantCount: "4",
		},
		"a worker, its index from its label": {
			pod:       utiltesting.MakePod("infer-1-2", "ns").Queue("q").Label(nameLabel, "infer").Label(groupIndexLabel, "1").Annotation(sizeAnnotation, "4").Obj(),
			wantGroup: "infer-1", wantCount: "4",
		},
		"a pod of no LeaderWorkerSet": {
			pod: utiltesting.MakePod("web-1", "ns").Queue("q").Obj(),
		},
		"a worker whose index is not a number": {
			pod: utiltesting.MakePod("infer-x-2", "ns").Queue("q").Label(nameLabel, "infer").Label(groupIndexLabel, "x").Annotation(sizeAnnotation, "4").Obj(),
		},
		"a pod already in a group keeps it": {
			pod:       utiltesting.MakePod("infer-1", "ns").Queue("q").Group("mine", "2").Label(nameLabel, "infer").Label(groupIndexLabel, "1").Annotation(sizeAnnotation, "4").Obj(),
			wantGroup: "mine", wantCount: "2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			(*pod.Pod)(tc.pod).Suspend()
			got := []string{tc.pod.Labels[berthv1alpha1.PodGroupNameLabel], tc.pod.Annotations[berthv1alpha1.PodGroupTotalCountAnnotation]}
			if diff := cmp.Diff([]string{tc.wantGroup, tc.wantCount}, got); diff != "" {
				t.Errorf("group and count (-want +got):\n%s", diff)
			}
		})
	}
}
