package kubectlberth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// benchCluster is queues ClusterQueues in cohorts of ten, each with a
// LocalQueue in its own namespace, and pending workloads spread over them.
func benchCluster(queues, pending int) *dashboard.Cluster {
	cl := &dashboard.Cluster{ClusterQueues: map[string]*berthv1alpha1.ClusterQueue{}, LocalQueues: map[string]*berthv1alpha1.LocalQueue{}, AllNamespaces: true, Now: time.Now()}
	cl.Flavors = []berthv1alpha1.ResourceFlavor{*utiltesting.MakeResourceFlavor("h100")}
	for i := range queues {
		name := fmt.Sprintf("cq-%04d", i)
		cq := utiltesting.MakeClusterQueue(name).Cohort(fmt.Sprintf("cohort-%d", i/10)).
			ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8").Obj()).Obj()
		cq.Spec.NamespaceSelector = &metav1.LabelSelector{}
		cl.ClusterQueues[name] = cq
		ns := fmt.Sprintf("ns-%04d", i)
		cl.LocalQueues[ns+"/main"] = utiltesting.MakeLocalQueue("main", ns, name)
	}
	for i := range pending {
		wl := utiltesting.MakeWorkload(fmt.Sprintf("w-%06d", i), fmt.Sprintf("ns-%04d", i%queues)).Queue("main").
			Priority(int32(i%4)).Created(time.Duration(i)*time.Millisecond).Request(1, "nvidia.com/gpu", "1").Obj()
		cl.Workloads = append(cl.Workloads, wl)
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

// BenchmarkDashboard is the dashboard's pages with 1,000 ClusterQueues in
// 100 cohorts and 50,000 workloads, 40,000 waiting and 10,000 admitted: the
// first page and a queue's, from the objects in memory to the HTML: first,
// right after a change, when the queues are ordered anew, and again, from
// the same snapshot. The stores' memory is the objects' heap (stores-MB),
// the page's size page-kB.
func BenchmarkDashboard(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cl := benchCluster(1000, 50000)
	for i := range 10000 {
		wl := cl.Workloads[i]
		cq := cl.LocalQueues[wl.Namespace+"/main"].Spec.ClusterQueue
		cl.Workloads[i] = utiltesting.MakeWorkload(wl.Name, wl.Namespace).Queue("main").Request(1, "nvidia.com/gpu", "1").AdmittedIn(string(cq), "h100").Obj()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	src := &still{cl: cl}
	d, err := newDashboard(src, "bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	h := d.handler()
	for _, path := range []string{"/", "/queue?name=cq-0001", "/cohort?name=cohort-7"} {
		for _, first := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/first=%v", path, first), func(b *testing.B) {
				b.ReportAllocs()
				size := 0
				for b.Loop() {
					if first {
						// A new snapshot orders its queues and reads its
						// histories again.
						src.cl = &dashboard.Cluster{
							Flavors: cl.Flavors, Cohorts: cl.Cohorts, ClusterQueues: cl.ClusterQueues, LocalQueues: cl.LocalQueues,
							Workloads: cl.Workloads, Namespaces: cl.Namespaces, AllNamespaces: cl.AllNamespaces, Now: cl.Now,
						}
					}
					rec := httptest.NewRecorder()
					req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:0"+path, nil)
					req.AddCookie(&http.Cookie{Name: cookie, Value: d.token})
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d", path, rec.Code)
					}
					size = rec.Body.Len()
				}
				b.ReportMetric(float64(size)/1e3, "page-kB")
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "stores-MB")
			})
		}
	}
}
