package jobframework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// applyPodDefaults adds to the templates of podSets what the API server will
// add to their pods (see workload.ApplyPodDefaults): the LimitRanges of the
// job's namespace and the overhead of each template's RuntimeClass, read
// through c. A RuntimeClass that does not exist is a field error: the API
// server would refuse every pod of the template.
func applyPodDefaults(ctx context.Context, c client.Reader, job GenericJob, podSets []berthv1alpha1.PodSet) (field.ErrorList, error) {
	limitRanges := &corev1.LimitRangeList{}
	if err := c.List(ctx, limitRanges, client.InNamespace(job.Object().GetNamespace())); err != nil {
		return nil, fmt.Errorf("reading the LimitRanges of namespace %s: %w", job.Object().GetNamespace(), err)
	}
	var errs field.ErrorList
	overheads := map[string]corev1.ResourceList{}
	for i := range podSets {
		spec := &podSets[i].Template.Spec
		var overhead corev1.ResourceList
		if name := spec.RuntimeClassName; name != nil && *name != "" {
			o, ok := overheads[*name]
			if !ok {
				rc := &nodev1.RuntimeClass{}
				switch err := c.Get(ctx, client.ObjectKey{Name: *name}, rc); {
				case apierrors.IsNotFound(err):
					_, tmpl := podSetPaths(job, podSets[i].Name)
					errs = append(errs, field.NotFound(tmpl.Child("spec", "runtimeClassName"), *name))
					continue
				case err != nil:
					return nil, fmt.Errorf("reading RuntimeClass %s: %w", *name, err)
				}
				if rc.Overhead != nil {
					o = rc.Overhead.PodFixed
				}
				overheads[*name] = o
			}
			overhead = o
		}
		workload.ApplyPodDefaults(spec, limitRanges.Items, overhead)
	}
	return errs, nil
}
