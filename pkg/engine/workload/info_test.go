package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func requests(pairs ...string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return corev1.ResourceRequirements{Requests: l}
}

// TestPodRequests counts what the API server and the kubelet count for a
// pod: limits standing for missing requests, sidecars added to the
// containers, the overhead.
func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
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
		"GPUs in limits only are requested": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": resource.MustParse("1")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			}}}},
			want: resources.Requests{"cpu": 1000, "nvidia.com/gpu": 8},
		},
		"an explicit request below the limit is the request": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": resource.MustParse("1")},
				Limits:   corev1.ResourceList{"cpu": resource.MustParse("4")},
			}}}},
			want: resources.Requests{"cpu": 1000},
		},
		"a sidecar adds to the containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Resources: requests("nvidia.com/gpu", "2"), RestartPolicy: &always}},
				Containers:     []corev1.Container{{Resources: requests("nvidia.com/gpu", "8")}},
			},
			want: resources.Requests{"nvidia.com/gpu": 10},
		},
		"an init container after a sidecar runs beside it": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Resources: requests("cpu", "1"), RestartPolicy: &always},
					{Resources: limits("cpu", "4")},
				},
				Containers: []corev1.Container{{Resources: requests("cpu", "1")}},
			},
			want: resources.Requests{"cpu": 5000},
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
	timedOut := utiltesting.MakeWorkload("a", "ns").Created(time.Minute).
		Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReadyTimeout, time.Hour).
		Condition(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, berthv1alpha1.ReasonPodsReadyTimeout, 2*time.Hour).Obj()
	preempted := utiltesting.MakeWorkload("a", "ns").Created(time.Minute).
		Condition(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 2*time.Hour).Obj()
	cases := map[string]struct {
		wl       *berthv1alpha1.Workload
		ordering Ordering
		want     time.Duration
	}{
		"pods-ready timeout by eviction":             {wl: timedOut, want: 2 * time.Hour},
		"pods-ready timeout by creation":             {wl: timedOut, ordering: Ordering{PodsReadyByCreation: true}, want: time.Minute},
		"preemption by eviction even under creation": {wl: preempted, ordering: Ordering{PodsReadyByCreation: true}, want: 2 * time.Hour},
		"creation":                  {wl: utiltesting.MakeWorkload("a", "ns").Created(time.Minute).Obj(), want: time.Minute},
		"eviction":                  {wl: utiltesting.MakeWorkload("a", "ns").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, "Preempted", time.Hour).Obj(), want: time.Hour},
		"requeue is later":          {wl: utiltesting.MakeWorkload("a", "ns").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, "Preempted", time.Hour).Condition(berthv1alpha1.WorkloadRequeued, metav1.ConditionTrue, "Requeued", 2*time.Hour).Obj(), want: 2 * time.Hour},
		"false eviction is ignored": {wl: utiltesting.MakeWorkload("a", "ns").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionFalse, "Preempted", time.Hour).Obj(), want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(utiltesting.BaseTime.Add(tc.want), tc.ordering.QueueTime(tc.wl)); diff != "" {
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

func limits(pairs ...string) corev1.ResourceRequirements {
	r := requests(pairs...)
	return corev1.ResourceRequirements{Limits: r.Requests}
}

func TestApplyPodDefaults(t *testing.T) {
	lr := func(defaults, defaultRequests corev1.ResourceList) corev1.LimitRange {
		return corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"cpu": resource.MustParse("100")}},
			{Type: corev1.LimitTypeContainer, Default: defaults, DefaultRequest: defaultRequests},
		}}}
	}
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	cases := map[string]struct {
		spec        corev1.PodSpec
		limitRanges []corev1.LimitRange
		overhead    corev1.ResourceList
		want        resources.Requests
	}{
		"a default request fills a container without one": {
			spec:        corev1.PodSpec{Containers: []corev1.Container{{Resources: requests("cpu", "1")}}},
			limitRanges: []corev1.LimitRange{lr(gpus("4"), gpus("4"))},
			want:        resources.Requests{"cpu": 1000, "nvidia.com/gpu": 4},
		},
		"a limit the user set comes before the default request": {
			spec:        corev1.PodSpec{Containers: []corev1.Container{{Resources: limits("nvidia.com/gpu", "8")}}},
			limitRanges: []corev1.LimitRange{lr(gpus("1"), gpus("1"))},
			want:        resources.Requests{"nvidia.com/gpu": 8},
		},
		"the first LimitRange wins": {
			spec:        corev1.PodSpec{Containers: []corev1.Container{{}}},
			limitRanges: []corev1.LimitRange{lr(gpus("2"), gpus("2")), lr(gpus("8"), gpus("8"))},
			want:        resources.Requests{"nvidia.com/gpu": 2},
		},
		"init containers are defaulted too": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{}},
				Containers:     []corev1.Container{{Resources: requests("nvidia.com/gpu", "1")}},
			},
			limitRanges: []corev1.LimitRange{lr(gpus("4"), gpus("4"))},
			want:        resources.Requests{"nvidia.com/gpu": 4},
		},
		"the RuntimeClass's overhead is added": {
			spec:     corev1.PodSpec{Containers: []corev1.Container{{Resources: requests("cpu", "1")}}},
			overhead: corev1.ResourceList{"cpu": resource.MustParse("500m")},
			want:     resources.Requests{"cpu": 1500},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ApplyPodDefaults(&tc.spec, tc.limitRanges, tc.overhead)
			if diff := cmp.Diff(tc.want, PodRequests(&tc.spec)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodSetTopologyRequest(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		count       int32
		want        TopologyRequest
		err         string
	}{
		"none":      {want: TopologyRequest{}},
		"required":  {annotations: map[string]string{berthv1alpha1.PodSetRequiredTopologyAnnotation: "rack"}, want: TopologyRequest{Level: "rack", Required: true}},
		"preferred": {annotations: map[string]string{berthv1alpha1.PodSetPreferredTopologyAnnotation: "block"}, want: TopologyRequest{Level: "block"}},
		"slices": {
			annotations: map[string]string{berthv1alpha1.PodSetRequiredTopologyAnnotation: "block", berthv1alpha1.PodSetSliceRequiredTopologyAnnotation: "rack", berthv1alpha1.PodSetSliceSizeAnnotation: "2"},
			want:        TopologyRequest{Level: "block", Required: true, SliceLevel: "rack", SliceSize: 2},
		},
		"both levels": {
			annotations: map[string]string{berthv1alpha1.PodSetRequiredTopologyAnnotation: "rack", berthv1alpha1.PodSetPreferredTopologyAnnotation: "block"},
			err:         "a podset names at most one",
		},
		"an empty level":            {annotations: map[string]string{berthv1alpha1.PodSetRequiredTopologyAnnotation: ""}, err: "is empty"},
		"unconstrained and a level": {annotations: map[string]string{berthv1alpha1.PodSetUnconstrainedTopologyAnnotation: "true", berthv1alpha1.PodSetPreferredTopologyAnnotation: "rack"}, err: "at most one"},
		"unconstrained, not a bool": {annotations: map[string]string{berthv1alpha1.PodSetUnconstrainedTopologyAnnotation: "yes"}, err: "true or false"},
		"a slice size alone":        {annotations: map[string]string{berthv1alpha1.PodSetSliceSizeAnnotation: "2"}, err: "go together"},
		"a slice size of 0": {
			annotations: map[string]string{berthv1alpha1.PodSetSliceRequiredTopologyAnnotation: "rack", berthv1alpha1.PodSetSliceSizeAnnotation: "0"},
			err:         "a whole number above 0",
		},
		"a slice size that does not divide the count": {
			annotations: map[string]string{berthv1alpha1.PodSetSliceRequiredTopologyAnnotation: "rack", berthv1alpha1.PodSetSliceSizeAnnotation: "3"},
			err:         "does not divide the podset's 4 pods",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ps := berthv1alpha1.PodSet{Name: "main", Count: 4}
			ps.Template.Annotations = tc.annotations
			got, err := PodSetTopologyRequest(&ps)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
