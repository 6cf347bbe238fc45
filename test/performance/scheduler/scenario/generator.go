package scenario

import (
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Names of the objects every scenario shares.
const (
	// FlavorName is the one ResourceFlavor, with no labels.
	FlavorName = "default"
	// localQueueName is the LocalQueue of every namespace.
	localQueueName = "main"
	// PodSetName is the one podset of every workload.
	PodSetName = "main"
)

// Scenario is a config expanded: the queues to create and the workloads
// to create, in creation order.
type Scenario struct {
	Cohorts   []Cohort
	Queues    []Queue
	Workloads []Planned
}

// Cohort is one cohort of the scenario and the capacity its queues own.
type Cohort struct {
	Name string
	// CapacityMilli is the sum of its ClusterQueues' nominal cpu quota.
	CapacityMilli int64
}

// Queue is one ClusterQueue, with its namespace and LocalQueue of the same
// name.
type Queue struct {
	Name   string
	Cohort string
	Set    *QueuesSet
}

// Planned is one workload and when to create it.
type Planned struct {
	Namespace    string
	Name         string
	Class        string
	Cohort       string
	Offset       time.Duration
	Runtime      time.Duration
	Priority     int32
	RequestMilli int64
}

// Generate expands cfg. scale (0 < scale <= 1) keeps that fraction of each
// workload set's count, at least one, for quick checks; 1 is the scenario.
func Generate(cfg *Config, scale float64) (*Scenario, error) {
	if scale <= 0 || scale > 1 {
		return nil, fmt.Errorf("scale %v: must be in (0, 1]", scale)
	}
	s := &Scenario{}
	for _, cs := range cfg.Cohorts {
		for ci := range cs.Count {
			cohort := Cohort{Name: fmt.Sprintf("%s-%d", cs.ClassName, ci)}
			for qsi := range cs.QueuesSets {
				qs := &cs.QueuesSets[qsi]
				for qi := range qs.Count {
					q := Queue{Name: fmt.Sprintf("%s-%s-%d", cohort.Name, qs.ClassName, qi), Cohort: cohort.Name, Set: qs}
					s.Queues = append(s.Queues, q)
					cohort.CapacityMilli += qs.NominalQuota.MilliValue()
					s.Workloads = append(s.Workloads, plan(q, qs.WorkloadsSets, scale)...)
				}
			}
			s.Cohorts = append(s.Cohorts, cohort)
		}
	}
	// Stable: workloads due at once are created in config order.
	sort.SliceStable(s.Workloads, func(i, j int) bool { return s.Workloads[i].Offset < s.Workloads[j].Offset })
	return s, nil
}

func plan(q Queue, sets []WorkloadsSet, scale float64) []Planned {
	var out []Planned
	for si, ws := range sets {
		n := max(1, int(math.Round(float64(ws.Count)*scale)))
		for i := range n {
			for _, w := range ws.Workloads {
				out = append(out, Planned{
					Namespace:    q.Name,
					Name:         fmt.Sprintf("%s-%d-%d", w.ClassName, si, i),
					Class:        w.ClassName,
					Cohort:       q.Cohort,
					Offset:       time.Duration(int64(i)*ws.CreationIntervalMs) * time.Millisecond,
					Runtime:      time.Duration(w.RuntimeMs) * time.Millisecond,
					Priority:     w.Priority,
					RequestMilli: w.Request.MilliValue(),
				})
			}
		}
	}
	return out
}

// ClusterQueue is the ClusterQueue of q: cpu in the one flavor, open to
// every namespace.
func (q Queue) ClusterQueue() *berthv1alpha1.ClusterQueue {
	quota := berthv1alpha1.ResourceQuota{Name: corev1.ResourceCPU, NominalQuota: q.Set.NominalQuota}
	if q.Set.BorrowingLimit != nil {
		quota.BorrowingLimit = ptr.To(q.Set.BorrowingLimit.DeepCopy())
	}
	return &berthv1alpha1.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: q.Name},
		Spec: berthv1alpha1.ClusterQueueSpec{
			CohortName:        berthv1alpha1.CohortReference(q.Cohort),
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: berthv1alpha1.ResourceGroups{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
				Flavors:          []berthv1alpha1.FlavorQuotas{{Name: FlavorName, Resources: []berthv1alpha1.ResourceQuota{quota}}},
			}},
			Preemption: berthv1alpha1.ClusterQueuePreemption{
				WithinClusterQueue:  q.Set.WithinClusterQueue,
				ReclaimWithinCohort: q.Set.ReclaimWithinCohort,
			},
		},
	}
}

// LocalQueue is the LocalQueue of q's namespace.
func (q Queue) LocalQueue() *berthv1alpha1.LocalQueue {
	return &berthv1alpha1.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: localQueueName, Namespace: q.Name},
		Spec:       berthv1alpha1.LocalQueueSpec{ClusterQueue: berthv1alpha1.ClusterQueueReference(q.Name)},
	}
}

// Workload is the Workload of p: one pod requesting p's cpu, with its
// priority set directly.
func (p *Planned) Workload() *berthv1alpha1.Workload {
	return &berthv1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: map[string]string{classLabel: p.Class}},
		Spec: berthv1alpha1.WorkloadSpec{
			QueueName: localQueueName,
			Priority:  ptr.To(p.Priority),
			PodSets: []berthv1alpha1.PodSet{{
				Name:  PodSetName,
				Count: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:      "main",
						Image:     "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(p.RequestMilli, resource.DecimalSI)}},
					}},
				}},
			}},
		},
	}
}

// classLabel carries a workload's class, for people reading the objects.
const classLabel = "perf.berth.dev/class"
