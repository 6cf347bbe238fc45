package kubectlberth

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestAudit runs kubectl berth audit on testCluster as it is (its admitted
// workload "running" has no pod), and with pods: "running", admitted in
// team-a for one pod of 6 GPUs, runs two (and a third that succeeded), and
// a pod in namespace b names LocalQueue main with no Workload (beside one
// that waits, gated). The output names the pods, and the command fails
// while there is a difference.
func TestAudit(t *testing.T) {
	withPods := func(objs []client.Object) []client.Object {
		pod := func(name, node string) *utiltesting.PodWrapper {
			return utiltesting.MakePod(name, "a").Label(berthv1alpha1.WorkloadLabel, "running").Label(berthv1alpha1.ManagedLabel, "true").
				Request("nvidia.com/gpu", "6").Bound(node).Phase(corev1.PodRunning)
		}
		rogue := utiltesting.MakePod("rogue", "b").Queue("main").Request("nvidia.com/gpu", "1").Request(corev1.ResourceCPU, "500m").Bound("h100-2").Obj()
		waiting := utiltesting.MakePod("waiting", "b").Queue("main").Label(berthv1alpha1.ManagedLabel, "true").Request("nvidia.com/gpu", "1").Gated().Obj()
		return append(objs, pod("running-0", "h100-0").Obj(), pod("running-1", "h100-1").Obj(),
			pod("done", "h100-1").Phase(corev1.PodSucceeded).Obj(), rogue, waiting)
	}
	cases := map[string]struct {
		args    []string
		mutate  func([]client.Object) []client.Object
		wantErr string
	}{
		"audit-clean":           {args: []string{"audit", "-A"}},
		"audit-all-namespaces":  {args: []string{"audit", "-A"}, mutate: withPods, wantErr: "pods run beyond what was admitted in 2 ClusterQueues"},
		"audit-namespace-json":  {args: []string{"audit", "-n", "b", "-o", "json"}, mutate: withPods, wantErr: "pods run beyond what was admitted in ClusterQueue team-b"},
		"audit-namespace-clean": {args: []string{"audit", "-n", "default"}, mutate: withPods},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := testCluster(t, false)
			if tc.mutate != nil {
				objs = tc.mutate(objs)
			}
			out, err := run(t, objs, tc.args...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none (exit status 0)", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q (exit status 1)", err, tc.wantErr)
			}
			compareGolden(t, name, out)
		})
	}
}
