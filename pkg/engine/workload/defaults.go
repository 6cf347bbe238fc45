package workload

import (
	corev1 "k8s.io/api/core/v1"
)

// ApplyPodDefaults adds to spec, a pod template's, what the API server adds
// to the resources of each pod created from it, so that quota is counted
// for the pods as they will run rather than as their template was written:
//   - a container's limits stand for its missing requests (the API's
//     defaulting of a pod);
//   - then each LimitRange of type Container of the namespace fills the
//     limits and requests a container still misses with its default and
//     defaultRequest, the first LimitRange to name a resource winning (the
//     LimitRanger admission plugin);
//   - overhead, the pod overhead of the template's RuntimeClass, is set
//     unless the template has its own (the RuntimeClass admission plugin).
//
// Init containers, sidecars among them, are defaulted as containers are.
// Values the template sets are never changed.
func ApplyPodDefaults(spec *corev1.PodSpec, limitRanges []corev1.LimitRange, overhead corev1.ResourceList) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			applyContainerDefaults(&cs[i].Resources, limitRanges)
		}
	}
	if len(overhead) > 0 && spec.Overhead == nil {
		spec.Overhead = overhead.DeepCopy()
	}
}

func applyContainerDefaults(r *corev1.ResourceRequirements, limitRanges []corev1.LimitRange) {
	if missesRequests(r.Requests, r.Limits) {
		r.Requests = withMissing(r.Requests, r.Limits)
	}
	for i := range limitRanges {
		for _, item := range limitRanges[i].Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			if missesRequests(r.Limits, item.Default) {
				r.Limits = withMissing(r.Limits, item.Default)
			}
			if missesRequests(r.Requests, item.DefaultRequest) {
				r.Requests = withMissing(r.Requests, item.DefaultRequest)
			}
		}
	}
}
