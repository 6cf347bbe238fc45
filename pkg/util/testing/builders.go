package testing

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// BaseTime is the creation time of built workloads unless set otherwise.
var BaseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WorkloadWrapper builds a Workload.
type WorkloadWrapper struct{ berthv1alpha1.Workload }

// MakeWorkload starts a Workload with no podsets, created at BaseTime.
func MakeWorkload(name, ns string) *WorkloadWrapper {
	return &WorkloadWrapper{berthv1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(BaseTime)},
	}}
}

// Obj returns the built Workload.
func (w *WorkloadWrapper) Obj() *berthv1alpha1.Workload { return &w.Workload }

// Queue sets spec.queueName.
func (w *WorkloadWrapper) Queue(q string) *WorkloadWrapper {
	w.Spec.QueueName = berthv1alpha1.LocalQueueName(q)
	return w
}

// Priority sets spec.priority.
func (w *WorkloadWrapper) Priority(p int32) *WorkloadWrapper {
	w.Spec.Priority = &p
	return w
}

// MaxExecTime sets spec.maximumExecutionTimeSeconds.
func (w *WorkloadWrapper) MaxExecTime(seconds int32) *WorkloadWrapper {
	w.Spec.MaximumExecutionTimeSeconds = &seconds
	return w
}

// Created sets the creation time to BaseTime plus d.
func (w *WorkloadWrapper) Created(d time.Duration) *WorkloadWrapper {
	w.CreationTimestamp = metav1.NewTime(BaseTime.Add(d))
	return w
}

// PodSets appends podsets.
func (w *WorkloadWrapper) PodSets(ps ...berthv1alpha1.PodSet) *WorkloadWrapper {
	w.Spec.PodSets = append(w.Spec.PodSets, ps...)
	return w
}

// Request appends a podset "main" of count pods, each requesting the given
// resource/quantity pairs: Request(1, "cpu", "2", "memory", "1Gi").
func (w *WorkloadWrapper) Request(count int32, pairs ...string) *WorkloadWrapper {
	return w.PodSets(*MakePodSet("main", count).Request(pairs...).Obj())
}

// Condition sets a condition, with LastTransitionTime at BaseTime plus d.
func (w *WorkloadWrapper) Condition(typ string, status metav1.ConditionStatus, reason string, d time.Duration) *WorkloadWrapper {
	c := metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(BaseTime.Add(d))}
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == typ {
			w.Status.Conditions[i] = c
			return w
		}
	}
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}

// Admitted sets QuotaReserved and Admitted True with the given admission.
func (w *WorkloadWrapper) Admitted(adm *berthv1alpha1.Admission) *WorkloadWrapper {
	w.Status.Admission = adm
	w.Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionTrue, berthv1alpha1.ReasonQuotaReserved, 0)
	return w.Condition(berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue, berthv1alpha1.ReasonAdmitted, 0)
}

// AdmittedIn admits the workload in cq with every resource of every podset
// on flavor, for the full counts.
func (w *WorkloadWrapper) AdmittedIn(cq, flavor string) *WorkloadWrapper {
	adm := MakeAdmission(cq)
	for _, ps := range w.Spec.PodSets {
		flavors := map[corev1.ResourceName]string{}
		usage := corev1.ResourceList{}
		for _, c := range ps.Template.Spec.Containers {
			for name, q := range c.Resources.Requests {
				flavors[name] = flavor
				total := q.DeepCopy()
				total.Mul(int64(ps.Count))
				if cur, ok := usage[name]; ok {
					total.Add(cur)
				}
				usage[name] = total
			}
		}
		adm.Assign(ps.Name, ps.Count, flavors, usage)
	}
	return w.Admitted(adm.Obj())
}

// PodSetWrapper builds a PodSet.
type PodSetWrapper struct{ berthv1alpha1.PodSet }

// MakePodSet starts a podset with one container and no requests.
func MakePodSet(name string, count int32) *PodSetWrapper {
	return &PodSetWrapper{berthv1alpha1.PodSet{
		Name:  name,
		Count: count,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}},
		}},
	}}
}

// Obj returns the built PodSet.
func (p *PodSetWrapper) Obj() *berthv1alpha1.PodSet { return &p.PodSet }

// Request sets requests of the first container from name/quantity pairs.
func (p *PodSetWrapper) Request(pairs ...string) *PodSetWrapper {
	for i := 0; i+1 < len(pairs); i += 2 {
		p.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return p
}

// MinCount sets minCount.
func (p *PodSetWrapper) MinCount(n int32) *PodSetWrapper {
	p.PodSet.MinCount = &n
	return p
}

// Toleration adds a toleration to the pod template.
func (p *PodSetWrapper) Toleration(t corev1.Toleration) *PodSetWrapper {
	p.Template.Spec.Tolerations = append(p.Template.Spec.Tolerations, t)
	return p
}

// NodeSelector sets a node selector entry on the pod template.
func (p *PodSetWrapper) NodeSelector(k, v string) *PodSetWrapper {
	if p.Template.Spec.NodeSelector == nil {
		p.Template.Spec.NodeSelector = map[string]string{}
	}
	p.Template.Spec.NodeSelector[k] = v
	return p
}

// Annotation sets an annotation on the pod template.
func (p *PodSetWrapper) Annotation(k, v string) *PodSetWrapper {
	if p.Template.Annotations == nil {
		p.Template.Annotations = map[string]string{}
	}
	p.Template.Annotations[k] = v
	return p
}

// AdmissionWrapper builds an Admission.
type AdmissionWrapper struct{ berthv1alpha1.Admission }

// MakeAdmission starts an admission in cq.
func MakeAdmission(cq string) *AdmissionWrapper {
	return &AdmissionWrapper{berthv1alpha1.Admission{ClusterQueue: berthv1alpha1.ClusterQueueReference(cq)}}
}

// Obj returns the built Admission.
func (a *AdmissionWrapper) Obj() *berthv1alpha1.Admission { return &a.Admission }

// Assign appends a podset assignment.
func (a *AdmissionWrapper) Assign(ps string, count int32, flavors map[corev1.ResourceName]string, usage corev1.ResourceList) *AdmissionWrapper {
	psa := berthv1alpha1.PodSetAssignment{Name: ps, Count: &count, ResourceUsage: usage, Flavors: map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference{}}
	for r, f := range flavors {
		psa.Flavors[r] = berthv1alpha1.ResourceFlavorReference(f)
	}
	a.PodSetAssignments = append(a.PodSetAssignments, psa)
	return a
}
