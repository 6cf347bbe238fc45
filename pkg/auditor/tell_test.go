package auditor

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/audit"
	"github.com/berth-dev/berth/pkg/metrics"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestTell plays audits in turn: all well, a Job's Workload running a pod
// beyond its admission and a pod with no Workload, the same findings again,
// all well again, and the first finding once more. Each new finding is
// told once on its owner; the metric follows every audit, 0 for the
// resources the ClusterQueue covers.
func TestTell(t *testing.T) {
	cq := utiltesting.MakeClusterQueue("audit-team").ResourceGroup(
		utiltesting.MakeFlavorQuotas("default").Resource("cpu", "4").Resource("memory", "8Gi").Obj()).Obj()
	wl := utiltesting.MakeWorkload("train", "a").Queue("main").Request(1, "cpu", "1").AdmittedIn("audit-team", "default").Obj()
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job-uid", Controller: ptr.To(true)}}
	jobPod := func(name string) *corev1.Pod {
		return utiltesting.MakePod(name, "a").OwnedBy("batch/v1", "Job", "train", "job-uid").Request(corev1.ResourceCPU, "1").Bound("node-1").Obj()
	}
	rogue := utiltesting.MakePod("rogue", "a").Queue("main").Request(corev1.ResourceCPU, "500m").Bound("node-2").Obj()
	in := func(pods ...*corev1.Pod) audit.Input {
		return audit.Input{Pods: pods, Workloads: []*berthv1alpha1.Workload{wl},
			LocalQueues: []*berthv1alpha1.LocalQueue{utiltesting.MakeLocalQueue("main", "a", "audit-team")}}
	}
	steps := []struct {
		in         audit.Input
		wantCPU    float64
		wantEvents []string
	}{
		{in: in(jobPod("p0"))},
		{in: in(jobPod("p0"), jobPod("p1"), rogue), wantCPU: 1.5, wantEvents: []string{
			"Warning UnaccountedPods 2 pods of Workload train use 2 cpu, beyond the 1 cpu that its admission in ClusterQueue audit-team holds for 1 pod: p0 on node-1, p1 on node-1 (Job a/train)",
			"Warning UnaccountedPods Pod rogue runs on node node-2 using 500m cpu with no Workload: ClusterQueue audit-team (LocalQueue main) does not count it (Pod a/rogue)",
		}},
		{in: in(jobPod("p0"), jobPod("p1"), rogue), wantCPU: 1.5},
		{in: in(jobPod("p0"))},
		{in: in(jobPod("p0"), jobPod("p1")), wantCPU: 1, wantEvents: []string{
			"Warning UnaccountedPods 2 pods of Workload train use 2 cpu, beyond the 1 cpu that its admission in ClusterQueue audit-team holds for 1 pod: p0 on node-1, p1 on node-1 (Job a/train)",
		}},
	}
	recorder := &recorder{}
	tl := newTeller(recorder)
	for i, step := range steps {
		tl.tell(t.Context(), audit.Compare(step.in), []*berthv1alpha1.ClusterQueue{cq})
		if got := testutil.ToFloat64(metrics.UnaccountedResources.WithLabelValues("audit-team", "cpu")); got != step.wantCPU {
			t.Errorf("step %d: cpu unaccounted %v, want %v", i, got, step.wantCPU)
		}
		if got := testutil.ToFloat64(metrics.UnaccountedResources.WithLabelValues("audit-team", "memory")); got != 0 {
			t.Errorf("step %d: memory unaccounted %v, want 0", i, got)
		}
		got := recorder.events
		recorder.events = nil
		if diff := cmp.Diff(step.wantEvents, got); diff != "" {
			t.Errorf("step %d: events (-want +got):\n%s", i, diff)
		}
	}
}

// recorder keeps each event as "type reason note (kind namespace/name)".
type recorder struct{ events []string }

var _ events.EventRecorder = (*recorder)(nil)

func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	ref := regarding.(*corev1.ObjectReference)
	r.events = append(r.events, fmt.Sprintf("%s %s %s (%s %s/%s)", eventtype, reason, fmt.Sprintf(note, args...), ref.Kind, ref.Namespace, ref.Name))
}
