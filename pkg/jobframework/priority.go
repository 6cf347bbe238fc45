package jobframework

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// else the PriorityClass its pods name, else the globalDefault
// WorkloadPriorityClass, else the globalDefault PriorityClass.
func priorityOfJob(ctx context.Context, c client.Reader, obj client.Object, podSets []berthv1alpha1.PodSet) (jobPriority, error) {
	if class := PriorityClassName(obj); class != "" {
		return workloadPriorityClass(ctx, c, class)
	}
	if podsName(podSets) == "" {
		if class, err := defaultWorkloadPriorityClass(ctx, c); err != nil || class != nil {
			return fromWorkloadPriorityClass(class), err
		}
	}
	return podPriority(ctx, c, podSets)
}

// workloadPriorityClass is the priority of the WorkloadPriorityClass
// class; a reference without a value while it does not exist.
func workloadPriorityClass(ctx context.Context, c client.Reader, class string) (jobPriority, error) {
	wpc := &berthv1alpha1.WorkloadPriorityClass{}
	if err := c.Get(ctx, types.NamespacedName{Name: class}, wpc); err != nil {
		wpc = &berthv1alpha1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}}
		p := fromWorkloadPriorityClass(wpc)
		p.value = nil
		return p, client.IgnoreNotFound(err)
	}
	return fromWorkloadPriorityClass(wpc), nil
}

func fromWorkloadPriorityClass(wpc *berthv1alpha1.WorkloadPriorityClass) jobPriority {
	return jobPriority{class: wpc.Name, value: ptr.To(wpc.Value), ref: &berthv1alpha1.PriorityClassRef{
		Group: berthv1alpha1.GroupVersion.Group, Kind: berthv1alpha1.WorkloadPriorityClassKind, Name: wpc.Name,
	}}
}

// defaultWorkloadPriorityClass is the globalDefault WorkloadPriorityClass,
// the lower of two; nil when there is none.
func defaultWorkloadPriorityClass(ctx context.Context, c client.Reader) (*berthv1alpha1.WorkloadPriorityClass, error) {
	list := &berthv1alpha1.WorkloadPriorityClassList{}
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	var found *berthv1alpha1.WorkloadPriorityClass
	for i := range list.Items {
		if wpc := &list.Items[i]; wpc.GlobalDefault && (found == nil || wpc.Value < found.Value) {
			found = wpc
		}
	}
	return found, nil
}

// podsName is the PriorityClass the first pod template naming one names.
func podsName(podSets []berthv1alpha1.PodSet) string {
	for _, ps := range podSets {
		if n := ps.Template.Spec.PriorityClassName; n != "" {
			return n
		}
	}
	return ""
}

// podPriority is the priority of pods with the given pod sets, as the API
// server's Priority admission would give them: the PriorityClass the first
// pod template naming one names, else the globalDefault PriorityClass;
// none when there is neither. A named class that does not exist yet gives
// a reference without a value: the Workload waits for it.
func podPriority(ctx context.Context, c client.Reader, podSets []berthv1alpha1.PodSet) (jobPriority, error) {
	name := podsName(podSets)
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
