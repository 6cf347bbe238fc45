package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// podSet is the YAML of one podset with the given name and counts.
func podSet(name string, count int, extra string) string {
	return fmt.Sprintf(`  - name: %s
    count: %d%s
    template:
      spec:
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
`, name, count, extra)
}

func TestWorkloadValidation(t *testing.T) {
	podSets := func(n int) string {
		s := ""
		for i := range n {
			s += podSet(fmt.Sprintf("ps%d", i), 1, "")
		}
		return s
	}
	cases := map[string]validationCase{
		"valid with partial admission": {
			body: "spec:\n  queueName: training\n  podSets:\n" + podSet("main", 4, "\n    minCount: 2"),
		},
		"eight podsets": {
			body: "spec:\n  podSets:\n" + podSets(8),
		},
		"no podsets": {
			body:    "spec:\n  podSets: []\n",
			wantErr: []string{"spec.podSets", "should have at least 1 items"},
		},
		"nine podsets": {
			body:    "spec:\n  podSets:\n" + podSets(9),
			wantErr: []string{"spec.podSets", "must have at most 8 items"},
		},
		"podset names not unique": {
			body:    "spec:\n  podSets:\n" + podSet("main", 1, "") + podSet("main", 2, ""),
			wantErr: []string{"spec.podSets[1]: Duplicate value"},
		},
		"count zero": {
			body:    "spec:\n  podSets:\n" + podSet("main", 0, ""),
			wantErr: []string{"spec.podSets[0].count", "greater than or equal to 1"},
		},
		"minCount zero": {
			body:    "spec:\n  podSets:\n" + podSet("main", 2, "\n    minCount: 0"),
			wantErr: []string{"spec.podSets[0].minCount", "greater than or equal to 1"},
		},
		"minCount above count": {
			body:    "spec:\n  podSets:\n" + podSet("main", 2, "\n    minCount: 3"),
			wantErr: []string{"podSets[].minCount must be less than or equal to podSets[].count"},
		},
		"invalid podset name": {
			body:    "spec:\n  podSets:\n" + podSet("Main_1", 1, ""),
			wantErr: []string{"spec.podSets[0].name", "should match"},
		},
		"invalid queue name": {
			body:    "spec:\n  queueName: my queue\n  podSets:\n" + podSet("main", 1, ""),
			wantErr: []string{"spec.queueName", "should match"},
		},
		"invalid priority class name": {
			body:    "spec:\n  priorityClassName: High!\n  podSets:\n" + podSet("main", 1, ""),
			wantErr: []string{"spec.priorityClassName", "should match"},
		},
	}
	runValidation(t, "Workload", cases)
}

// reserveQuota sets QuotaReserved=True through the status subresource, as
// Berth does on admission.
func reserveQuota(t *testing.T, wl *berthv1alpha1.Workload) {
	t.Helper()
	ctx := testContext(t)
	wl.Status.Conditions = []metav1.Condition{{
		Type:               berthv1alpha1.WorkloadQuotaReserved,
		Status:             metav1.ConditionTrue,
		Reason:             berthv1alpha1.ReasonQuotaReserved,
		Message:            "Quota reserved in ClusterQueue team-a",
		LastTransitionTime: metav1.Now(),
	}}
	if err := server.Client.Status().Update(ctx, wl); err != nil {
		t.Fatalf("reserving quota: %v", err)
	}
}

func TestWorkloadImmutableWhileQuotaReserved(t *testing.T) {
	cases := map[string]struct {
		reserved bool
		mutate   func(*berthv1alpha1.Workload)
		wantErr  []string
	}{
		"queueName changes while pending": {
			mutate: func(wl *berthv1alpha1.Workload) { wl.Spec.QueueName = "inference" },
		},
		"podSets change while pending": {
			mutate: func(wl *berthv1alpha1.Workload) { wl.Spec.PodSets[0].Count = 3 },
		},
		"queueName changes while reserved": {
			reserved: true,
			mutate:   func(wl *berthv1alpha1.Workload) { wl.Spec.QueueName = "inference" },
			wantErr:  []string{"spec.queueName is immutable while quota is reserved"},
		},
		"queueName removed while reserved": {
			reserved: true,
			mutate:   func(wl *berthv1alpha1.Workload) { wl.Spec.QueueName = "" },
			wantErr:  []string{"spec.queueName is immutable while quota is reserved"},
		},
		"podSets change while reserved": {
			reserved: true,
			mutate:   func(wl *berthv1alpha1.Workload) { wl.Spec.PodSets[0].Count = 3 },
			wantErr:  []string{"spec.podSets is immutable while quota is reserved"},
		},
		"active changes while reserved": {
			reserved: true,
			mutate:   func(wl *berthv1alpha1.Workload) { wl.Spec.Active = ptr.To(false) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			u := object(t, manifest("Workload", "spec:\n  queueName: training\n  podSets:\n"+podSet("main", 2, "")))
			if err := create(ctx, t, u); err != nil {
				t.Fatal(err)
			}
			wl := &berthv1alpha1.Workload{}
			if err := server.Client.Get(ctx, client.ObjectKeyFromObject(u), wl); err != nil {
				t.Fatal(err)
			}
			if tc.reserved {
				reserveQuota(t, wl)
			}
			// A merge patch sends only what changed, as Berth's controllers
			// and kubectl do; an Update from a typed Go object would also
			// send empty template fields the stored object does not have.
			orig := wl.DeepCopy()
			tc.mutate(wl)
			checkErr(t, server.Client.Patch(ctx, wl, client.MergeFrom(orig)), tc.wantErr)
		})
	}
}

func TestLocalQueueClusterQueueIsImmutable(t *testing.T) {
	ctx := testContext(t)
	u := object(t, manifest("LocalQueue", "spec:\n  clusterQueue: team-a\n"))
	if err := create(ctx, t, u); err != nil {
		t.Fatal(err)
	}
	lq := &berthv1alpha1.LocalQueue{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(u), lq); err != nil {
		t.Fatal(err)
	}
	lq.Spec.StopPolicy = berthv1alpha1.Hold
	checkErr(t, server.Client.Update(ctx, lq), nil)
	lq.Spec.ClusterQueue = "team-b"
	checkErr(t, server.Client.Update(ctx, lq), []string{"spec.clusterQueue is immutable"})
}

// A podset's template and the admission are each one field to server-side
// apply: the managed fields of the Workload's creator hold the template as
// a leaf, and those of the admitting writer the admission, not field by
// field.
func TestWorkloadTemplateAndAdmissionAreOneManagedField(t *testing.T) {
	ctx := testContext(t)
	u := object(t, "apiVersion: berth.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: atomic-template\n  namespace: default\nspec:\n  queueName: main\n  podSets:\n"+podSet("main", 2, ""))
	if err := create(ctx, t, u); err != nil {
		t.Fatal(err)
	}
	wl := &berthv1alpha1.Workload{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(u), wl); err != nil {
		t.Fatal(err)
	}
	if len(wl.ManagedFields) != 1 {
		t.Fatalf("managed fields %+v, want the creator's alone", wl.ManagedFields)
	}
	expectLeaf(t, wl.ManagedFields[0], "f:spec", "f:podSets", `k:{"name":"main"}`, "f:template")

	wl.Status.Admission = &berthv1alpha1.Admission{
		ClusterQueue: "team-a",
		PodSetAssignments: []berthv1alpha1.PodSetAssignment{{
			Name:          "main",
			Flavors:       map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{corev1.ResourceCPU: "default"},
			ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Count:         ptr.To[int32](2),
		}},
	}
	if err := server.Client.Status().Update(ctx, wl, client.FieldOwner("admitter")); err != nil {
		t.Fatal(err)
	}
	var admitter *metav1.ManagedFieldsEntry
	for i, e := range wl.ManagedFields {
		if e.Manager == "admitter" && e.Subresource == "status" {
			admitter = &wl.ManagedFields[i]
		}
	}
	if admitter == nil {
		t.Fatalf("managed fields %+v, want an entry of the admitter's status write", wl.ManagedFields)
	}
	expectLeaf(t, *admitter, "f:status", "f:admission")

	bad := object(t, "apiVersion: berth.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: atomic-template-invalid\n  namespace: default\nspec:\n  queueName: main\n  podSets:\n  - name: main\n    count: 1\n    template:\n      spec:\n        containers: [{name: c, image: busybox, ports: [{containerPort: \"http\"}]}]\n")
	err := create(ctx, t, bad)
	if err == nil || !strings.Contains(err.Error(), "spec.podSets[0].template.spec.containers[0].ports[0].containerPort") {
		t.Errorf("a template with a string port: %v, want it refused naming the field", err)
	}
}

// expectLeaf fails t unless the fields of entry hold path as one field: {}.
func expectLeaf(t *testing.T, entry metav1.ManagedFieldsEntry, path ...string) {
	t.Helper()
	if entry.FieldsV1 == nil {
		t.Fatalf("managed fields of %s: none", entry.Manager)
	}
	var fields map[string]any
	if err := json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields); err != nil {
		t.Fatal(err)
	}
	leaf, found, err := unstructured.NestedMap(fields, path...)
	if err != nil || !found || len(leaf) != 0 {
		t.Errorf("%s's fields at %v: %v (found %t, %v), want it as one field: {}", entry.Manager, path, leaf, found, err)
	}
}
