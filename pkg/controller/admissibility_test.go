package controller

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestSliceElsewhere: a slice of an elastic job is queued only in the
// ClusterQueue where its job holds quota, since its quota is taken into
// the job's Workload once admitted.
func TestSliceElsewhere(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := errors.Join(berthv1alpha1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	job := utiltesting.MakeWorkload("job", "ns").Request(2, "nvidia.com/gpu", "1").AdmittedIn("old", "h100").Obj()
	waiting := utiltesting.MakeWorkload("waiting", "ns").Request(2, "nvidia.com/gpu", "1").Obj()
	slice := func(of string) *berthv1alpha1.Workload {
		s := utiltesting.MakeWorkload("job-slice", "ns").Queue("main").Request(1, "nvidia.com/gpu", "1").Obj()
		s.Labels = map[string]string{berthv1alpha1.SliceOfLabel: of}
		return s
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job, waiting).Build()
	cases := map[string]struct {
		wl   *berthv1alpha1.Workload
		cq   string
		want string
	}{
		"a slice in its job's ClusterQueue":   {wl: slice("job"), cq: "old"},
		"a slice whose LocalQueue was moved":  {wl: slice("job"), cq: "new", want: "The slice grows Workload job, which holds quota in ClusterQueue old; LocalQueue main now points to ClusterQueue new"},
		"a slice of a job that holds nothing": {wl: slice("waiting"), cq: "new"},
		"a slice whose job is gone":           {wl: slice("gone"), cq: "new"},
		"not a slice":                         {wl: waiting, cq: "new"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := sliceElsewhere(t.Context(), client.Reader(c), tc.wl, tc.cq)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || (tc.want != "" && !strings.Contains(got, "LocalQueue main")) {
				t.Errorf("sliceElsewhere = %q, want %q", got, tc.want)
			}
		})
	}
}
