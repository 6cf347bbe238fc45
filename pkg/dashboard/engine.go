package dashboard

import (
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// CohortGroup is a cohort, or with an empty name the ClusterQueues in none,
// and its ClusterQueues in name order.
type CohortGroup struct {
	Name, Parent string
	Queues       []*berthv1alpha1.ClusterQueue
}

// ByCohort groups the ClusterQueues by cohort: the queues in no cohort
// first, if any, then every cohort that has a Cohort object or is named by
// a ClusterQueue, in name order.
func (cl *Cluster) ByCohort() []CohortGroup {
	parents := map[string]string{}
	for _, c := range cl.Cohorts {
		parents[c.Name] = string(c.Spec.ParentName)
	}
	queues := map[string][]*berthv1alpha1.ClusterQueue{}
	for _, name := range slices.Sorted(maps.Keys(cl.ClusterQueues)) {
		cq := cl.ClusterQueues[name]
		cohort := string(cq.Spec.CohortName)
		if _, ok := parents[cohort]; !ok && cohort != "" {
			parents[cohort] = ""
		}
		queues[cohort] = append(queues[cohort], cq)
	}
	var out []CohortGroup
	if len(queues[""]) > 0 {
		out = append(out, CohortGroup{Queues: queues[""]})
	}
	for _, name := range slices.Sorted(maps.Keys(parents)) {
		out = append(out, CohortGroup{Name: name, Parent: parents[name], Queues: queues[name]})
	}
	return out
}

// LoadQuotaTree loads cl's flavors, cohorts and ClusterQueues into c.
func (cl *Cluster) LoadQuotaTree(c *cache.Cache) {
	for i := range cl.Flavors {
		c.AddOrUpdateResourceFlavor(&cl.Flavors[i])
	}
	for i := range cl.Cohorts {
		c.AddOrUpdateCohort(&cl.Cohorts[i])
	}
	for _, name := range slices.Sorted(maps.Keys(cl.ClusterQueues)) {
		c.AddOrUpdateClusterQueue(cl.ClusterQueues[name])
	}
}

// LoadStatusUsage loads into c, for each ClusterQueue, the quota its status
// says is in use.
func (cl *Cluster) LoadStatusUsage(c *cache.Cache) {
	for _, name := range slices.Sorted(maps.Keys(cl.ClusterQueues)) {
		c.AddOrUpdateWorkload(statusUsage(cl.ClusterQueues[name]))
	}
}

// statusUsage is a stand-in Workload holding what a ClusterQueue's status
// says is in use, at a priority nothing preempts.
func statusUsage(cq *berthv1alpha1.ClusterQueue) *berthv1alpha1.Workload {
	wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "", Name: "in-use-" + cq.Name}}
	wl.Spec.Priority = ptr.To[int32](math.MaxInt32)
	adm := &berthv1alpha1.Admission{ClusterQueue: berthv1alpha1.ClusterQueueReference(cq.Name)}
	for _, fu := range cq.Status.FlavorsUsage {
		psa := berthv1alpha1.PodSetAssignment{Name: string(fu.Name), Flavors: map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{}, ResourceUsage: corev1.ResourceList{}}
		for _, r := range fu.Resources {
			psa.Flavors[r.Name] = fu.Name
			psa.ResourceUsage[r.Name] = r.Total
		}
		adm.PodSetAssignments = append(adm.PodSetAssignments, psa)
	}
	wl.Status.Admission = adm
	workload.SetCondition(wl, berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, "")
	return wl
}

// Order is the workload's place: in its ClusterQueue when known, else
// in its LocalQueue.
func (p Position) Order() int {
	if p.InClusterQueue > 0 {
		return p.InClusterQueue
	}
	return p.InLocalQueue
}

// RequestsOf is what the workload asks for in all, per resource.
func RequestsOf(wl *berthv1alpha1.Workload) map[string]string {
	total := resources.Requests{}
	for i := range wl.Spec.PodSets {
		ps := &wl.Spec.PodSets[i]
		total.Add(workload.PodRequests(&ps.Template.Spec).Scaled(int64(ps.Count)))
	}
	out := make(map[string]string, len(total))
	for _, name := range total.Names() {
		out[string(name)] = resources.Format(name, total[name])
	}
	return out
}
