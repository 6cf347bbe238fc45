package kubectlberth

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// benchCluster is queues ClusterQueues in cohorts of ten, each with a
// LocalQueue in its own namespace, and pending workloads spread over them.
func benchCluster(queues, pending int) *cluster {
	cl := &cluster{clusterQueues: map[string]*berthv1alpha1.ClusterQueue{}, localQueues: map[string]*berthv1alpha1.LocalQueue{}, allNamespaces: true, now: time.Now()}
	cl.flavors = []berthv1alpha1.ResourceFlavor{*utiltesting.MakeResourceFlavor("h100")}
	for i := range queues {
		name := fmt.Sprintf("cq-%04d", i)
		cq := utiltesting.MakeClusterQueue(name).Cohort(fmt.Sprintf("cohort-%d", i/10)).
			ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8").Obj()).Obj()
		cq.Spec.NamespaceSelector = &metav1.LabelSelector{}
		cl.clusterQueues[name] = cq
		ns := fmt.Sprintf("ns-%04d", i)
		cl.localQueues[ns+"/main"] = utiltesting.MakeLocalQueue("main", ns, name)
	}
	for i := range pending {
		wl := utiltesting.MakeWorkload(fmt.Sprintf("w-%06d", i), fmt.Sprintf("ns-%04d", i%queues)).Queue("main").
			Priority(int32(i%4)).Created(time.Duration(i)*time.Millisecond).Request(1, "nvidia.com/gpu", "1").Obj()
		cl.workloads = append(cl.workloads, wl)
	}
	return cl
}

// BenchmarkPositions is kubectl berth positions clusterqueue over 50,000
// pending workloads in 1,000 ClusterQueues, after the list.
func BenchmarkPositions(b *testing.B) {
	cl := benchCluster(1000, 50000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := positionsOf(cl, "clusterqueue", "", "cq-0001"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWhatIf is kubectl berth what-if on 1,000 ClusterQueues in 100
// cohorts with 5,000 workloads waiting, after the list.
func BenchmarkWhatIf(b *testing.B) {
	cl := benchCluster(1000, 5000)
	wl := utiltesting.MakeWorkload("new", "ns-0001").Queue("main").Request(1, "nvidia.com/gpu", "2").Obj()
	b.ResetTimer()
	for b.Loop() {
		out, err := judge(context.Background(), nil, cl, wl)
		if err != nil || out.ClusterQueue != "cq-0001" {
			b.Fatalf("%+v, %v", out, err)
		}
	}
}
