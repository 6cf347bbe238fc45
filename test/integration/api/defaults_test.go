package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// defaultPreemption and defaultFungibility are what an empty ClusterQueue
// spec gets.
var (
	defaultPreemption = berthv1alpha1.ClusterQueuePreemption{
		WithinClusterQueue:  berthv1alpha1.PreemptionPolicyNever,
		ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyNever,
		BorrowWithinCohort:  berthv1alpha1.BorrowWithinCohort{Policy: berthv1alpha1.PreemptionPolicyNever},
	}
	defaultFungibility = berthv1alpha1.FlavorFungibility{
		WhenCanBorrow:  berthv1alpha1.MayStopSearch,
		WhenCanPreempt: berthv1alpha1.TryNextFlavor,
	}
)

// TestRoundTripWithDefaults creates a valid object of every kind from YAML
// and reads it back as the Go type: what was set survives, what was left
// out is defaulted.
func TestRoundTripWithDefaults(t *testing.T) {
	cases := map[string]struct {
		manifest string
		got      client.Object
		spec     func(client.Object) any
		want     any
	}{
		"ResourceFlavor": {
			manifest: manifest("ResourceFlavor", `spec:
  nodeLabels: {gpu.berth.dev/family: h100}
  nodeTaints: [{key: nvidia.com/gpu, effect: NoSchedule}]
`),
			got:  &berthv1alpha1.ResourceFlavor{},
			spec: func(o client.Object) any { return o.(*berthv1alpha1.ResourceFlavor).Spec },
			want: berthv1alpha1.ResourceFlavorSpec{
				NodeLabels: map[string]string{"gpu.berth.dev/family": "h100"},
				NodeTaints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}},
			},
		},
		"empty ClusterQueue": {
			manifest: manifest("ClusterQueue", "spec: {}\n"),
			got:      &berthv1alpha1.ClusterQueue{},
			spec:     func(o client.Object) any { return o.(*berthv1alpha1.ClusterQueue).Spec },
			want: berthv1alpha1.ClusterQueueSpec{
				QueueingStrategy:  berthv1alpha1.BestEffortFIFO,
				Preemption:        defaultPreemption,
				FlavorFungibility: defaultFungibility,
				StopPolicy:        berthv1alpha1.None,
			},
		},
		"ClusterQueue with quota": {
			manifest: manifest("ClusterQueue", gpuQueue("research", "        nominalQuota: 8\n        borrowingLimit: 4\n        lendingLimit: 2")+
				"  namespaceSelector: {}\n  queueingStrategy: StrictFIFO\n  preemption: {reclaimWithinCohort: Any}\n"),
			got:  &berthv1alpha1.ClusterQueue{},
			spec: func(o client.Object) any { return o.(*berthv1alpha1.ClusterQueue).Spec },
			want: berthv1alpha1.ClusterQueueSpec{
				CohortName: "research",
				ResourceGroups: berthv1alpha1.ResourceGroups{{
					CoveredResources: []corev1.ResourceName{"cpu", "nvidia.com/gpu"},
					Flavors: []berthv1alpha1.FlavorQuotas{{
						Name: "h100",
						Resources: []berthv1alpha1.ResourceQuota{
							{Name: "cpu", NominalQuota: resource.MustParse("10")},
							{
								Name:           "nvidia.com/gpu",
								NominalQuota:   resource.MustParse("8"),
								BorrowingLimit: ptr.To(resource.MustParse("4")),
								LendingLimit:   ptr.To(resource.MustParse("2")),
							},
						},
					}},
				}},
				NamespaceSelector: &metav1.LabelSelector{},
				QueueingStrategy:  berthv1alpha1.StrictFIFO,
				Preemption: berthv1alpha1.ClusterQueuePreemption{
					WithinClusterQueue:  berthv1alpha1.PreemptionPolicyNever,
					ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny,
					BorrowWithinCohort:  berthv1alpha1.BorrowWithinCohort{Policy: berthv1alpha1.PreemptionPolicyNever},
				},
				FlavorFungibility: defaultFungibility,
				StopPolicy:        berthv1alpha1.None,
			},
		},
		"Cohort": {
			manifest: manifest("Cohort", "spec:\n  parentName: org\n"),
			got:      &berthv1alpha1.Cohort{},
			spec:     func(o client.Object) any { return o.(*berthv1alpha1.Cohort).Spec },
			want:     berthv1alpha1.CohortSpec{ParentName: "org"},
		},
		"LocalQueue": {
			manifest: manifest("LocalQueue", "spec:\n  clusterQueue: team-a\n"),
			got:      &berthv1alpha1.LocalQueue{},
			spec:     func(o client.Object) any { return o.(*berthv1alpha1.LocalQueue).Spec },
			want:     berthv1alpha1.LocalQueueSpec{ClusterQueue: "team-a", StopPolicy: berthv1alpha1.None},
		},
		"WorkloadPriorityClass": {
			manifest: manifest("WorkloadPriorityClass", "value: 100\ndescription: Batch work.\n"),
			got:      &berthv1alpha1.WorkloadPriorityClass{},
			spec: func(o client.Object) any {
				wpc := o.(*berthv1alpha1.WorkloadPriorityClass)
				return [2]any{wpc.Value, wpc.Description}
			},
			want: [2]any{int32(100), "Batch work."},
		},
		"Workload": {
			manifest: manifest("Workload", `spec:
  queueName: training
  priorityClassName: production
  podSets:
  - name: main
    template:
      metadata: {labels: {app: train}}
      spec:
        containers: [{name: c, image: busybox}]
`),
			got:  &berthv1alpha1.Workload{},
			spec: func(o client.Object) any { return o.(*berthv1alpha1.Workload).Spec },
			want: berthv1alpha1.WorkloadSpec{
				QueueName:         "training",
				PriorityClassName: "production",
				Active:            ptr.To(true),
				PodSets: []berthv1alpha1.PodSet{{
					Name:  "main",
					Count: 1,
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
					},
				}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			obj := object(t, tc.manifest)
			if err := create(ctx, t, obj); err != nil {
				t.Fatal(err)
			}
			if err := server.Client.Get(ctx, client.ObjectKeyFromObject(obj), tc.got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.spec(tc.got)); diff != "" {
				t.Errorf("read back (-want +got):\n%s", diff)
			}
		})
	}
}
