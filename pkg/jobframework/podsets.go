package jobframework

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// admittedInfos is how each podset of an admitted workload runs: its
// admitted count, the flavors' node labels added to its node selector, the
// flavors' tolerations added to its tolerations, and the labels that tie
// its pods to the workload.
func admittedInfos(ctx context.Context, c client.Reader, wl *berthv1alpha1.Workload) ([]PodSetInfo, error) {
	assignments := map[string]*berthv1alpha1.PodSetAssignment{}
	for i := range wl.Status.Admission.PodSetAssignments {
		psa := &wl.Status.Admission.PodSetAssignments[i]
		assignments[psa.Name] = psa
	}
	flavors := map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor{}
	infos := make([]PodSetInfo, 0, len(wl.Spec.PodSets))
	for i := range wl.Spec.PodSets {
		ps := &wl.Spec.PodSets[i]
		info := originalInfo(ps)
		info.Labels = maps.Clone(info.Labels)
		if info.Labels == nil {
			info.Labels = map[string]string{}
		}
		info.Labels[berthv1alpha1.WorkloadLabel] = wl.Name
		info.Labels[berthv1alpha1.ManagedLabel] = "true"
		info.Labels[berthv1alpha1.PodSetLabel] = ps.Name
		psa, ok := assignments[ps.Name]
		if !ok {
			return nil, fmt.Errorf("admission of workload %s has no assignment for podset %s", wl.Name, ps.Name)
		}
		info.Count = ptr.Deref(psa.Count, ps.Count)
		info.Annotations = maps.Clone(info.Annotations)
		if info.Annotations == nil {
			info.Annotations = map[string]string{}
		}
		info.Annotations[berthv1alpha1.PodSetSizeAnnotation] = strconv.Itoa(int(info.Count))
		info.NodeSelector = maps.Clone(info.NodeSelector)
		info.Tolerations = slices.Clone(info.Tolerations)
		for _, name := range distinctFlavors(psa.Flavors) {
			rf, err := flavor(ctx, c, flavors, name)
			if err != nil {
				return nil, err
			}
			if len(rf.Spec.NodeLabels) > 0 && info.NodeSelector == nil {
				info.NodeSelector = map[string]string{}
			}
			maps.Copy(info.NodeSelector, rf.Spec.NodeLabels)
			info.Tolerations = AppendMissingTolerations(info.Tolerations, rf.Spec.Tolerations)
		}
		if ta := psa.TopologyAssignment; ta != nil {
			if info.NodeSelector == nil {
				info.NodeSelector = map[string]string{}
			}
			selector, reqs := TopologyConstraints(ta)
			maps.Copy(info.NodeSelector, selector)
			// An elastic podset grows where its template lets the pods
			// it adds go: in the narrowest domain that holds its
			// admission, not on those nodes alone.
			if ps.Template.Labels[berthv1alpha1.ElasticLabel] != "true" {
				info.NodeRequirements = reqs
				info.Affinity = NarrowAffinity(info.Affinity, reqs)
			}
			encoded, err := json.Marshal(ta)
			if err != nil {
				return nil, fmt.Errorf("encoding the topology assignment of podset %s: %w", ps.Name, err)
			}
			info.Annotations[berthv1alpha1.PodSetTopologyAssignmentAnnotation] = string(encoded)
		}
		addCheckUpdates(&info, wl)
		infos = append(infos, info)
	}
	return infos, nil
}

// addCheckUpdates adds to info what the workload's admission checks add to
// the pods of its podset.
func addCheckUpdates(info *PodSetInfo, wl *berthv1alpha1.Workload) {
	for _, c := range wl.Status.AdmissionChecks {
		for _, u := range c.PodSetUpdates {
			if u.Name != info.Name {
				continue
			}
			info.CheckLabels = MergeMaps(info.CheckLabels, u.Labels)
			info.CheckAnnotations = MergeMaps(info.CheckAnnotations, u.Annotations)
			maps.Copy(info.Labels, u.Labels)
			maps.Copy(info.Annotations, u.Annotations)
			if len(u.NodeSelector) > 0 {
				info.NodeSelector = MergeMaps(info.NodeSelector, u.NodeSelector)
			}
			info.Tolerations = AppendMissingTolerations(info.Tolerations, u.Tolerations)
		}
	}
}

// MergeMaps copies add into m, made if nil, and returns m.
func MergeMaps(m, add map[string]string) map[string]string {
	if len(add) == 0 {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, add)
	return m
}

// AdmittedPodSets is how each podset of an admitted workload runs (see
// admittedInfos): for what needs the pods as they will be, such as the
// ProvisioningRequests of admission checks.
func AdmittedPodSets(ctx context.Context, c client.Reader, wl *berthv1alpha1.Workload) ([]PodSetInfo, error) {
	return admittedInfos(ctx, c, wl)
}

// originalInfos is how each podset runs before admission, as the
// Workload's templates recorded it.
func originalInfos(wl *berthv1alpha1.Workload) []PodSetInfo {
	infos := make([]PodSetInfo, 0, len(wl.Spec.PodSets))
	for i := range wl.Spec.PodSets {
		infos = append(infos, originalInfo(&wl.Spec.PodSets[i]))
	}
	return infos
}

func originalInfo(ps *berthv1alpha1.PodSet) PodSetInfo {
	return PodSetInfo{
		Name:         ps.Name,
		Count:        ps.Count,
		NodeSelector: ps.Template.Spec.NodeSelector,
		Tolerations:  ps.Template.Spec.Tolerations,
		Affinity:     ps.Template.Spec.Affinity,
		Labels:       ps.Template.Labels,
		Annotations:  ps.Template.Annotations,
	}
}

func distinctFlavors(byResource map[corev1.ResourceName]berthv1alpha1.ResourceFlavorReference) []berthv1alpha1.ResourceFlavorReference {
	set := map[berthv1alpha1.ResourceFlavorReference]bool{}
	for _, f := range byResource {
		set[f] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func flavor(ctx context.Context, c client.Reader, seen map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor, name berthv1alpha1.ResourceFlavorReference) (*berthv1alpha1.ResourceFlavor, error) {
	if rf, ok := seen[name]; ok {
		return rf, nil
	}
	rf := &berthv1alpha1.ResourceFlavor{}
	if err := c.Get(ctx, types.NamespacedName{Name: string(name)}, rf); err != nil {
		return nil, fmt.Errorf("reading ResourceFlavor %s: %w", name, err)
	}
	seen[name] = rf
	return rf, nil
}

// AppendMissingTolerations appends to have the tolerations of add it does
// not have yet.
func AppendMissingTolerations(have, add []corev1.Toleration) []corev1.Toleration {
	for _, t := range add {
		if !slices.ContainsFunc(have, func(h corev1.Toleration) bool { return h.MatchToleration(&t) && h.Value == t.Value }) {
			have = append(have, t)
		}
	}
	return have
}

// ApplyToTemplate sets a pod template's node selector, tolerations,
// affinity, labels and annotations to info's. Frameworks call it from
// RunWithPodSetsInfo and RestorePodSetsInfo; it reports whether the
// template changed.
func ApplyToTemplate(t *corev1.PodTemplateSpec, info PodSetInfo) bool {
	changed := !maps.Equal(t.Spec.NodeSelector, info.NodeSelector) ||
		!equality.Semantic.DeepEqual(t.Spec.Tolerations, info.Tolerations) ||
		!equality.Semantic.DeepEqual(t.Spec.Affinity, info.Affinity) ||
		!maps.Equal(t.Labels, info.Labels) || !maps.Equal(t.Annotations, info.Annotations)
	t.Spec.NodeSelector = maps.Clone(info.NodeSelector)
	t.Spec.Tolerations = slices.Clone(info.Tolerations)
	t.Spec.Affinity = info.Affinity.DeepCopy()
	t.Labels = maps.Clone(info.Labels)
	t.Annotations = maps.Clone(info.Annotations)
	return changed
}

// TopologyConstraints keep a podset's pods in the domains of its topology
// assignment, for any scheduler. The selector holds the values all the
// domains share, level by level from the widest: a gang admitted to one
// rack gets its block and rack, one admitted to one host the host too.
// From the first level where the domains differ, each level narrower
// takes a requirement that its label be one of the domains' values: a gang
// spread over two racks is kept in those two racks, one spread over hosts
// on those hosts. How many pods go to each domain is berth-scheduler's to
// keep (its BerthTopology plugin).
func TopologyConstraints(ta *berthv1alpha1.TopologyAssignment) (map[string]string, []corev1.NodeSelectorRequirement) {
	selector := map[string]string{}
	var reqs []corev1.NodeSelectorRequirement
	if len(ta.Domains) == 0 {
		return selector, nil
	}
	for i, level := range ta.Levels {
		values := map[string]bool{}
		for _, d := range ta.Domains {
			values[valueAt(d.Values, i)] = true
		}
		if values[""] {
			break
		}
		if len(values) == 1 && len(reqs) == 0 {
			selector[level] = valueAt(ta.Domains[0].Values, i)
			continue
		}
		reqs = append(reqs, corev1.NodeSelectorRequirement{
			Key: level, Operator: corev1.NodeSelectorOpIn, Values: slices.Sorted(maps.Keys(values)),
		})
	}
	return selector, reqs
}

// NarrowAffinity returns a copy of a whose required node affinity also
// asks for reqs: they are added to each of its terms (a node must match one
// term), or make its only term when it has none. A term that has a
// requirement already is not given it twice. With no reqs it returns a.
func NarrowAffinity(a *corev1.Affinity, reqs []corev1.NodeSelectorRequirement) *corev1.Affinity {
	if len(reqs) == 0 {
		return a
	}
	out := a.DeepCopy()
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	if out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	required := out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(required.NodeSelectorTerms) == 0 {
		required.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range required.NodeSelectorTerms {
		term := &required.NodeSelectorTerms[i]
		for _, r := range reqs {
			if !slices.ContainsFunc(term.MatchExpressions, func(have corev1.NodeSelectorRequirement) bool {
				return equality.Semantic.DeepEqual(have, r)
			}) {
				term.MatchExpressions = append(term.MatchExpressions, r)
			}
		}
	}
	return out
}

func valueAt(values []string, i int) string {
	if i < len(values) {
		return values[i]
	}
	return ""
}
