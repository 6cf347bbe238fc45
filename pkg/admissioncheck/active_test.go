package admissioncheck

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

func TestParameters(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&berthv1alpha1.MultiClusterConfig{ObjectMeta: metav1.ObjectMeta{Name: "workers"}}).Build()
	for name, tc := range map[string]struct {
		params *berthv1alpha1.AdmissionCheckParametersReference
		why    string
	}{
		"none":       {why: "spec.parameters must name a MultiClusterConfig (apiGroup berth.dev)"},
		"other kind": {params: &berthv1alpha1.AdmissionCheckParametersReference{APIGroup: "example.com", Kind: "Config", Name: "workers"}, why: "spec.parameters names Config of example.com; want a MultiClusterConfig of berth.dev"},
		"missing":    {params: &berthv1alpha1.AdmissionCheckParametersReference{APIGroup: "berth.dev", Kind: "MultiClusterConfig", Name: "absent"}, why: "MultiClusterConfig absent named in spec.parameters does not exist"},
		"there":      {params: &berthv1alpha1.AdmissionCheckParametersReference{APIGroup: "berth.dev", Kind: "MultiClusterConfig", Name: "workers"}},
	} {
		t.Run(name, func(t *testing.T) {
			ac := &berthv1alpha1.AdmissionCheck{Spec: berthv1alpha1.AdmissionCheckSpec{Parameters: tc.params}}
			cfg := &berthv1alpha1.MultiClusterConfig{}
			why, err := Parameters(t.Context(), c, ac, "MultiClusterConfig", cfg)
			if err != nil || why != tc.why {
				t.Fatalf("Parameters: %q, %v; want %q", why, err, tc.why)
			}
			if why == "" && cfg.Name != "workers" {
				t.Errorf("read %q", cfg.Name)
			}
		})
	}
}
