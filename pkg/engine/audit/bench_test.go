package audit

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// BenchmarkCompare audits a cluster the size of the perf baseline: 15,000
// admitted Workloads of Jobs in 30 namespaces (one LocalQueue and
// ClusterQueue each), two pods each of 1 cpu and 1Gi, so 30,000 running
// pods; every 97th Workload (about 150, in every queue) runs a third pod
// beyond its admission. Half the pods are proven by their owner, half by
// their label. afresh computes every pod's requests; remembered keeps
// them from the audit before, as the controller does, none of the pods
// having changed.
func BenchmarkCompare(b *testing.B) {
	in := Input{}
	const queues, workloads = 30, 15000
	for q := range queues {
		in.LocalQueues = append(in.LocalQueues, utiltesting.MakeLocalQueue("main", fmt.Sprintf("ns-%d", q), fmt.Sprintf("cq-%d", q)))
	}
	for i := range workloads {
		ns := fmt.Sprintf("ns-%d", i%queues)
		job := types.UID(fmt.Sprintf("job-%d", i))
		wl := utiltesting.MakeWorkload(fmt.Sprintf("wl-%d", i), ns).Queue("main").Request(2, "cpu", "1", "memory", "1Gi").
			AdmittedIn(fmt.Sprintf("cq-%d", i%queues), "default").Obj()
		wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: wl.Name, UID: job, Controller: ptr.To(true)}}
		wl.UID, wl.ResourceVersion = types.UID(wl.Name), "1"
		in.Workloads = append(in.Workloads, wl)
		pods := 2
		if i%97 == 0 {
			pods = 3
		}
		for p := range pods {
			pod := utiltesting.MakePod(fmt.Sprintf("%s-%d", wl.Name, p), ns).Label(berthv1alpha1.WorkloadLabel, wl.Name).
				Request(corev1.ResourceCPU, "1").Request(corev1.ResourceMemory, "1Gi").Bound("node").Phase(corev1.PodRunning)
			if i%2 == 0 {
				pod.OwnedBy("batch/v1", "Job", wl.Name, string(job))
			}
			pod.UID, pod.ResourceVersion = types.UID(pod.Name), "1"
			in.Pods = append(in.Pods, pod.Obj())
		}
	}
	for name, memo := range map[string]*Memo{"afresh": nil, "remembered": NewMemo()} {
		b.Run(name, func(b *testing.B) {
			in.Memo = memo
			Compare(in)
			b.ReportAllocs()
			for b.Loop() {
				r := Compare(in)
				if n := len(r.ClusterQueues); n != queues {
					b.Fatalf("found beyond admission in %d ClusterQueues, want %d", n, queues)
				}
			}
		})
	}
}
