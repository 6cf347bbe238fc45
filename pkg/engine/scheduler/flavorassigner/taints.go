package flavorassigner

import (
	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// checkFlavor reports whether the podset may run on the flavor's nodes:
// every NoSchedule/NoExecute taint tolerated, by the pod template or by the
// flavor's own tolerations, and no node selector entry contradicting the
// flavor's labels.
func checkFlavor(ps *workload.PodSetInfo, rf *berthv1alpha1.ResourceFlavor) (miss, bool) {
	for i := range rf.Spec.NodeTaints {
		taint := &rf.Spec.NodeTaints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !tolerated(taint, ps.Tolerations) && !tolerated(taint, rf.Spec.Tolerations) {
			return miss{kind: missTaint, taint: taint}, false
		}
	}
	for k, v := range ps.NodeSelector {
		if fv, ok := rf.Spec.NodeLabels[k]; ok && fv != v {
			return miss{kind: missSelector, label: k + "=" + v}, false
		}
	}
	return miss{}, true
}

func tolerated(taint *corev1.Taint, tols []corev1.Toleration) bool {
	for i := range tols {
		if tolerates(&tols[i], taint) {
			return true
		}
	}
	return false
}

// tolerates follows the kubelet's matching: an empty effect matches all
// effects, an empty key with Exists matches all keys.
func tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return t.Key != "" && t.Value == taint.Value
	}
	return false
}
