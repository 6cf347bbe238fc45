package jobframework

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// WorkloadName is the name of the Workload of a job: the kind and name of
// the job and a hash of its UID, so that a job deleted and created again
// under the same name gets a new Workload. It fits in a label value (63
// characters): the pods of an admitted job carry it in berth.dev/workload.
func WorkloadName(gvk schema.GroupVersionKind, name string, uid string) string {
	sum := sha256.Sum256([]byte(gvk.String() + "/" + uid))
	return fit(strings.ToLower(gvk.Kind)+"-"+name, maxLabelValue) + "-" + hex.EncodeToString(sum[:5])
}

// maxLabelValue is the length of the longest label value.
const maxLabelValue = 63

// hashSuffix is the length of the "-" and ten hex digits that Berth ends a
// shortened name with.
const hashSuffix = 11

// fit is the beginning of prefix that leaves room for a hash suffix in
// maxLen characters, without a trailing separator.
func fit(prefix string, maxLen int) string {
	if len(prefix) > maxLen-hashSuffix {
		prefix = prefix[:maxLen-hashSuffix]
	}
	return strings.TrimRight(prefix, "-._")
}

// LabelValue is name as a label value: itself when it fits, else its
// beginning and a hash of all of it.
func LabelValue(name string) string {
	return FitName(name, maxLabelValue)
}

// FitName is name in at most maxLen characters: itself when it fits, else
// its beginning and a hash of all of it, so that two long names that begin
// alike still differ.
func FitName(name string, maxLen int) string {
	if len(name) <= maxLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return fit(name, maxLen) + "-" + hex.EncodeToString(sum[:5])
}

// HandDownLabels keeps the queue and priority labels of a template those
// of its owner: set when the owner has them, removed when it has not.
func HandDownLabels(owner map[string]string, template *map[string]string) {
	for _, k := range []string{berthv1alpha1.QueueNameLabel, berthv1alpha1.PriorityClassLabel} {
		v, ok := owner[k]
		switch {
		case ok:
			if *template == nil {
				*template = map[string]string{}
			}
			(*template)[k] = v
		default:
			delete(*template, k)
		}
	}
}

// QueueName is the LocalQueue a job is submitted to, from its label.
func QueueName(job metav1.Object) string {
	return job.GetLabels()[berthv1alpha1.QueueNameLabel]
}

// PriorityClassName is the WorkloadPriorityClass of a job, from its label.
func PriorityClassName(job metav1.Object) string {
	return job.GetLabels()[berthv1alpha1.PriorityClassLabel]
}

// MaxExecTimeSeconds is the job's execution time limit, from its label
// berth.dev/max-exec-time-seconds; nil when it has none. A value that is
// not a whole number from 1 to 2147483647 is an error naming the label.
func MaxExecTimeSeconds(job metav1.Object) (*int32, *field.Error) {
	v, ok := job.GetLabels()[berthv1alpha1.MaxExecTimeSecondsLabel]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return nil, field.Invalid(field.NewPath("metadata", "labels").Key(berthv1alpha1.MaxExecTimeSecondsLabel), v,
			"must be a whole number of seconds from 1 to 2147483647")
	}
	return ptr.To(int32(n)), nil
}

// newWorkload is the Workload of the job obj, owned by it, with its pod
// sets. Its labels name its queue and its job's UID, so that a person can
// go from the job to it with a label selector.
func newWorkload(obj client.Object, gvk schema.GroupVersionKind, podSets []berthv1alpha1.PodSet, priority jobPriority) *berthv1alpha1.Workload {
	maxExec, _ := MaxExecTimeSeconds(obj)
	wl := &berthv1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:            WorkloadName(gvk, obj.GetName(), string(obj.GetUID())),
			Namespace:       obj.GetNamespace(),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(obj, gvk)},
			Labels: map[string]string{
				berthv1alpha1.QueueNameLabel: QueueName(obj),
				berthv1alpha1.JobUIDLabel:    string(obj.GetUID()),
			},
		},
		Spec: berthv1alpha1.WorkloadSpec{
			PodSets:                     podSets,
			QueueName:                   berthv1alpha1.LocalQueueName(QueueName(obj)),
			Active:                      ptr.To(true),
			MaximumExecutionTimeSeconds: maxExec,
		},
	}
	if origin, ok := obj.GetLabels()[berthv1alpha1.MultiClusterOriginLabel]; ok {
		// A manager's copy: the manager finds its Workload by it.
		wl.Labels[berthv1alpha1.MultiClusterOriginLabel] = origin
	}
	priority.set(&wl.Spec)
	return wl
}

// finishReason is the Finished condition's reason for a job's outcome.
func finishReason(succeeded bool) string {
	if succeeded {
		return berthv1alpha1.ReasonSucceeded
	}
	return berthv1alpha1.ReasonFailed
}

// WorkloadFor is the Workload the controller would make for the job obj,
// of a registered framework: its pod sets as the webhook would accept
// them, its queue, and its priority class unresolved. kubectl berth
// what-if judges it without creating it. The LimitRanges and
// RuntimeClasses that add to its pods are read through r.
func WorkloadFor(ctx context.Context, r client.Reader, obj client.Object) (*berthv1alpha1.Workload, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	i, ok := ForKind(gvk)
	if !ok {
		return nil, fmt.Errorf("%s is not a kind Berth runs (known: %v)", gvk.Kind, Names())
	}
	if i.Wrap == nil {
		return nil, fmt.Errorf("the pods of a %s are queued one by one, not the %s itself", gvk.Kind, gvk.Kind)
	}
	job, err := i.Wrap(obj)
	if err != nil {
		return nil, err
	}
	podSets, errs, err := podSetsOf(ctx, r, job)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	// The class is not resolved: the plugin's user may not read it.
	return newWorkload(obj, gvk, podSets, jobPriority{class: PriorityClassName(obj)}), nil
}
