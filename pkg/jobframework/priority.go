package jobframework

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// jobPriority is where a job's priority comes from and its value, as its
// Workload's spec holds them.
type jobPriority struct {
	// class is the WorkloadPriorityClass the job's label names, if any.
	class string
	ref   *berthv1alpha1.PriorityClassRef
	// value is nil while the class does not exist.
	value *int32
}

// set writes p into a Workload's spec.
func (p jobPriority) set(spec *berthv1alpha1.WorkloadSpec) {
	spec.PriorityClassName, spec.PriorityClassRef, spec.Priority = p.class, p.ref, p.value
}

// priorityOfJob is the priority of a job with the given pod sets: its
// WorkloadPriorityClass (label berth.dev/priority-class) if it names one,
// else the PriorityClass of its pods.
func priorityOfJob(ctx context.Context, c client.Reader, obj client.Object, podSets []berthv1alpha1.PodSet) (jobPriority, error) {
	if class := PriorityClassName(obj); class != "" {
		p := jobPriority{class: class, ref: &berthv1alpha1.PriorityClassRef{
			Group: berthv1alpha1.GroupVersion.Group, Kind: berthv1alpha1.WorkloadPriorityClassKind, Name: class,
		}}
		wpc := &berthv1alpha1.WorkloadPriorityClass{}
		if err := c.Get(ctx, types.NamespacedName{Name: class}, wpc); err != nil {
			return p, client.IgnoreNotFound(err)
		}
		p.value = ptr.To(wpc.Value)
		return p, nil
	}
	return podPriority(ctx, c, podSets)
}

// podPriority is the priority of pods with the given pod sets, as the API
// server's Priority admission would give them: the PriorityClass the first
// pod template naming one names, else the globalDefault PriorityClass;
// none when there is neither. A named class that does not exist yet gives
// a reference without a value: the Workload waits for it.
func podPriority(ctx context.Context, c client.Reader, podSets []berthv1alpha1.PodSet) (jobPriority, error) {
	name := ""
	for _, ps := range podSets {
		if n := ps.Template.Spec.PriorityClassName; n != "" {
			name = n
			break
		}
	}
	if name == "" {
		return defaultPriority(ctx, c)
	}
	p := jobPriority{ref: &berthv1alpha1.PriorityClassRef{Group: berthv1alpha1.PriorityClassGroup, Kind: berthv1alpha1.PriorityClassKind, Name: name}}
	pc := &schedulingv1.PriorityClass{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, pc); err != nil {
		return p, client.IgnoreNotFound(err)
	}
	p.value = ptr.To(pc.Value)
	return p, nil
}

// defaultPriority is the cluster's globalDefault PriorityClass; of two,
// which the API server does not allow but a race may leave, the lower.
func defaultPriority(ctx context.Context, c client.Reader) (jobPriority, error) {
	list := &schedulingv1.PriorityClassList{}
	if err := c.List(ctx, list); err != nil {
		return jobPriority{}, err
	}
	var found *schedulingv1.PriorityClass
	for i := range list.Items {
		pc := &list.Items[i]
		if pc.GlobalDefault && (found == nil || pc.Value < found.Value) {
			found = pc
		}
	}
	if found == nil {
		return jobPriority{}, nil
	}
	return jobPriority{
		ref:   &berthv1alpha1.PriorityClassRef{Group: berthv1alpha1.PriorityClassGroup, Kind: berthv1alpha1.PriorityClassKind, Name: found.Name},
		value: ptr.To(found.Value),
	}, nil
}
