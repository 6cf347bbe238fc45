package statefulset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

func statefulSet(name, uid string, replicas int32, labels map[string]string) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + uid), Labels: labels}}
	sts.Spec.Replicas = ptr.To(replicas)
	sts.Spec.Template.Labels = map[string]string{berthv1alpha1.PodGroupNameLabel: name}
	return sts
}

func TestReplicas(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		objs         []client.Object
		want         int32
		wantNotFound bool
	}{
		"its replicas": {objs: []client.Object{statefulSet("s", "1", 4, nil)}, want: 4},
		"another StatefulSet under its name: none": {objs: []client.Object{statefulSet("s", "2", 4, nil)}},
		"gone": {wantNotFound: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			got, err := replicas(t.Context(), c, "ns", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "s", UID: "uid-1"})
			if apierrors.IsNotFound(err) != tc.wantNotFound || (err != nil && !tc.wantNotFound) {
				t.Fatalf("error %v, want NotFound %v", err, tc.wantNotFound)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replicas (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupOf(t *testing.T) {
	queued := map[string]string{berthv1alpha1.QueueNameLabel: "q"}
	cases := map[string]struct {
		obj  client.Object
		want string
	}{
		"a queued StatefulSet": {obj: statefulSet("s", "1", 2, queued), want: "s"},
		"one not queued":       {obj: statefulSet("s", "1", 2, nil)},
		"another kind":         {obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: queued}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, groupOf(tc.obj)); diff != "" {
				t.Errorf("group (-want +got):\n%s", diff)
			}
		})
	}
}

// TestThePodIntegrationWatchesStatefulSets: registering the owner makes the
// pod integration's controller follow StatefulSets, whose replicas are
// their groups' sizes.
func TestThePodIntegrationWatchesStatefulSets(t *testing.T) {
	i, ok := jobframework.Lookup(configv1alpha1.FrameworkPod)
	if !ok {
		t.Fatal("the pod integration is not registered")
	}
	for _, src := range i.GroupSources {
		if _, ok := src.Object.(*appsv1.StatefulSet); ok {
			return
		}
	}
	t.Errorf("the pod integration's group sources %v hold no StatefulSet", i.GroupSources)
}
