package jobframework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// TestPodPriority: the pods' priority is their named PriorityClass's, else
// the globalDefault's, else none; a named class that does not exist yet is
// referenced without a value.
func TestPodPriority(t *testing.T) {
	pc := func(name string, value int32, global bool) *schedulingv1.PriorityClass {
		return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: global}
	}
	podSets := func(class string) []berthv1alpha1.PodSet {
		return []berthv1alpha1.PodSet{{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{PriorityClassName: class}}}}
	}
	ref := func(name string) *berthv1alpha1.PriorityClassRef {
		return &berthv1alpha1.PriorityClassRef{Group: "scheduling.k8s.io", Kind: "PriorityClass", Name: name}
	}
	cases := map[string]struct {
		classes []*schedulingv1.PriorityClass
		named   string
		want    jobPriority
	}{
		"named":                       {classes: []*schedulingv1.PriorityClass{pc("high", 500, false), pc("default", 10, true)}, named: "high", want: jobPriority{ref: ref("high"), value: ptr.To[int32](500)}},
		"the global default":          {classes: []*schedulingv1.PriorityClass{pc("high", 500, false), pc("default", 10, true)}, want: jobPriority{ref: ref("default"), value: ptr.To[int32](10)}},
		"none":                        {classes: []*schedulingv1.PriorityClass{pc("high", 500, false)}},
		"named, not there yet":        {named: "later", want: jobPriority{ref: ref("later")}},
		"two defaults: the lower one": {classes: []*schedulingv1.PriorityClass{pc("a", 30, true), pc("b", 20, true)}, want: jobPriority{ref: ref("b"), value: ptr.To[int32](20)}},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			for _, c := range tc.classes {
				b = b.WithObjects(c)
			}
			got, err := podPriority(t.Context(), b.Build(), podSets(tc.named))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(jobPriority{})); diff != "" {
				t.Errorf("priority (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPriorityOfJobOrder: the job's label first, then the PriorityClass its
// pods name, then the default WorkloadPriorityClass, then the default
// PriorityClass.
func TestPriorityOfJobOrder(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	wpc := func(name string, value int32, global bool) *berthv1alpha1.WorkloadPriorityClass {
		return &berthv1alpha1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: global}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		wpc("research", 70, false), wpc("batch-default", 5, true),
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 500},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "cluster-default"}, Value: 1, GlobalDefault: true},
	).Build()
	job := func(label, podClass string) (*metav1.PartialObjectMetadata, []berthv1alpha1.PodSet) {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}}
		if label != "" {
			obj.Labels = map[string]string{berthv1alpha1.PriorityClassLabel: label}
		}
		return obj, []berthv1alpha1.PodSet{{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{PriorityClassName: podClass}}}}
	}
	for _, tc := range []struct {
		label, podClass string
		wantKind        string
		wantName        string
		wantValue       int32
	}{
		{label: "research", podClass: "high", wantKind: "WorkloadPriorityClass", wantName: "research", wantValue: 70},
		{podClass: "high", wantKind: "PriorityClass", wantName: "high", wantValue: 500},
		{wantKind: "WorkloadPriorityClass", wantName: "batch-default", wantValue: 5},
	} {
		obj, podSets := job(tc.label, tc.podClass)
		got, err := priorityOfJob(t.Context(), c, obj, podSets)
		if err != nil {
			t.Fatal(err)
		}
		if got.ref == nil || got.ref.Kind != tc.wantKind || got.ref.Name != tc.wantName || ptr.Deref(got.value, -1) != tc.wantValue {
			t.Errorf("label %q, pods' class %q: %+v (%v), want %s %s = %d", tc.label, tc.podClass, got.ref, got.value, tc.wantKind, tc.wantName, tc.wantValue)
		}
	}
	// Without a default WorkloadPriorityClass, the default PriorityClass.
	c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "cluster-default"}, Value: 1, GlobalDefault: true},
	).Build()
	obj, podSets := job("", "")
	if got, err := priorityOfJob(t.Context(), c, obj, podSets); err != nil || got.ref == nil || got.ref.Name != "cluster-default" {
		t.Errorf("without a default WorkloadPriorityClass: %+v, %v; want the default PriorityClass", got.ref, err)
	}
}
