package workload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func requests(pairs ...string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return corev1.ResourceRequirements{Requests: l}
}

func TestPodRequests(t *testing.T) {
	cases := map[string]struct {
		spec corev1.PodSpec
		want resources.Requests
	}{
		"containers add up": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: requests("cpu", "500m", "memory", "1Gi")}, {Resources: requests("cpu", "1")}}},
			want: resources.Requests{"cpu": 1500, "memory": 1 << 30},
		},
		"init container raises the maximum": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Resources: requests("cpu", "4")}},
				Containers:     []corev1.Container{{Resources: requests("cpu", "1", "nvidia.com/gpu", "2")}},
			},
			want: resources.Requests{"cpu": 4000, "nvidia.com/gpu": 2},
		},
		"overhead is added": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{{Resources: requests("cpu", "1")}},
				Overhead:   corev1.ResourceList{"cpu": resource.MustParse("250m")},
			},
			want: resources.Requests{"cpu": 1250},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PodRequests(&tc.spec)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueueTime(t *testing.T) {
	cases := map[string]struct {
		wl   *berthv1alpha1.Workload
		want time.Duration
	}{
		"creation":                  {wl: utiltesting.MakeWorkload("a", "ns").Created(time.Minute).Obj(), want: time.Minute},
		"eviction":                  {wl: utiltesting.MakeWorkload("a", "ns").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, "Preempted", time.Hour).Obj(), want: time.Hour},
		"requeue is later":          {wl: utiltesting.MakeWorkload("a", "ns").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, "Preempted", time.Hour).Condition(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, "Requeued", 2*time.Hour).Obj(), want: 2 * time.Hour},
		"false eviction is ignored": {wl: utiltesting.MakeWorkload("a", "ns").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionFalse, "Preempted", time.Hour).Obj(), want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(utiltesting.BaseTime.Add(tc.want), QueueTime(tc.wl)); diff != "" {
				t.Errorf("queue time (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewInfoUsage(t *testing.T) {
	wl := utiltesting.MakeWorkload("a", "ns").Priority(3).Request(2, "nvidia.com/gpu", "4", "cpu", "1").AdmittedIn("cq", "h100").Obj()
	info := NewInfo(wl)
	want := resources.Usage{
		{Flavor: "h100", Resource: "nvidia.com/gpu"}: 8,
		{Flavor: "h100", Resource: "cpu"}:            2000,
	}
	if diff := cmp.Diff(want, info.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if info.ClusterQueue != "cq" || info.Priority != 3 || info.Key != "ns/a" {
		t.Errorf("info = %s in %s priority %d", info.Key, info.ClusterQueue, info.Priority)
	}
}
