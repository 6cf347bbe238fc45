package podset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKeyOf(t *testing.T) {
	cases := map[string]struct {
		labels map[string]string
		want   Key
		wantOK bool
	}{
		"both labels": {
			labels: map[string]string{WorkloadLabel: "train", PodSetLabel: "workers"},
			want:   Key{Namespace: "ns", Workload: "train", PodSet: "workers"},
			wantOK: true,
		},
		"no labels":      {},
		"workload only":  {labels: map[string]string{WorkloadLabel: "train"}},
		"podset only":    {labels: map[string]string{PodSetLabel: "workers"}},
		"empty workload": {labels: map[string]string{WorkloadLabel: "", PodSetLabel: "workers"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: tc.labels}}
			got, ok := KeyOf(pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("KeyOf() (-want +got):\n%s", diff)
			}
			if ok != tc.wantOK {
				t.Errorf("KeyOf() ok = %v, want %v", ok, tc.wantOK)
			}
		})
	}
}
