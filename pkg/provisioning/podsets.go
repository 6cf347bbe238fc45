package provisioning

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// requested are the podsets of wl's admission that a request of cfg asks
// nodes for: those that ask for a managed resource, or all of them when
// cfg manages every resource. The admission's resourceUsage says what each
// asks for.
func requested(wl *berthv1alpha1.Workload, cfg *berthv1alpha1.ProvisioningRequestConfig) []string {
	var out []string
	if wl.Status.Admission == nil {
		return nil
	}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		managed := len(cfg.Spec.ManagedResources) == 0
		for r, q := range psa.ResourceUsage {
			if !q.IsZero() && slices.Contains(cfg.Spec.ManagedResources, r) {
				managed = true
			}
		}
		if managed {
			out = append(out, psa.Name)
		}
	}
	return out
}

// requestPodSet is one podset of a request: the pod template it asks
// nodes for, how many pods, and the workload's podsets it stands for.
type requestPodSet struct {
	template corev1.PodTemplateSpec
	count    int32
	podSets  []string
}

// requestPodSets are the podsets of the request for wl: those of its
// requested podsets as their pods will run (infos, from the admission,
// give each its flavors' node labels and tolerations and its admitted
// count), merged under cfg's podSetMergePolicy.
func requestPodSets(wl *berthv1alpha1.Workload, infos []jobframework.PodSetInfo, cfg *berthv1alpha1.ProvisioningRequestConfig, labels map[string]string) []requestPodSet {
	want := requested(wl, cfg)
	var out []requestPodSet
	for i, info := range infos {
		if !slices.Contains(want, info.Name) {
			continue
		}
		tmpl := wl.Spec.PodSets[i].Template.DeepCopy()
		tmpl.Spec.NodeSelector, tmpl.Spec.Tolerations = info.NodeSelector, info.Tolerations
		tmpl.Labels = jobframework.MergeMaps(tmpl.Labels, labels)
		if j := slices.IndexFunc(out, func(ps requestPodSet) bool { return mergeable(cfg.Spec.PodSetMergePolicy, &ps.template, tmpl) }); j >= 0 {
			out[j].count += info.Count
			out[j].podSets = append(out[j].podSets, info.Name)
			continue
		}
		out = append(out, requestPodSet{template: *tmpl, count: info.Count, podSets: []string{info.Name}})
	}
	return out
}

// mergeable reports whether the pods of templates a and b may be one
// podset of a request under policy.
func mergeable(policy *berthv1alpha1.ProvisioningRequestPodSetMergePolicy, a, b *corev1.PodTemplateSpec) bool {
	switch {
	case policy == nil:
		return false
	case *policy == berthv1alpha1.IdenticalPodTemplates:
		return equality.Semantic.DeepEqual(a.Spec, b.Spec)
	}
	return equality.Semantic.DeepEqual(schedulingRequirements(&a.Spec), schedulingRequirements(&b.Spec))
}

// schedulingRequirements is what decides where, and on what size of node,
// a pod can run.
func schedulingRequirements(spec *corev1.PodSpec) any {
	var requests []corev1.ResourceList
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		requests = append(requests, c.Resources.Requests)
	}
	return struct {
		Requests     []corev1.ResourceList
		NodeSelector map[string]string
		Tolerations  []corev1.Toleration
		Affinity     *corev1.Affinity
		Priority     string
	}{requests, spec.NodeSelector, spec.Tolerations, spec.Affinity, spec.PriorityClassName}
}
