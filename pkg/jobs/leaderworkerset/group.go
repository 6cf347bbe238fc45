package leaderworkerset

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/jobs/pod"
)

// The labels and annotations by which a LeaderWorkerSet's controller
// (sigs.k8s.io/lws) says which of its groups a pod is in.
const (
	nameLabel        = "leaderworkerset.sigs.k8s.io/name"
	groupIndexLabel  = "leaderworkerset.sigs.k8s.io/group-index"
	workerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"
	sizeAnnotation   = "leaderworkerset.sigs.k8s.io/size"
)

var _ pod.GroupJoiner = joinGroup

// joinGroup puts a pod of a LeaderWorkerSet in the pod group of its leader
// and workers, of the LeaderWorkerSet's size. A worker's group index is on
// its StatefulSet's template; a leader's, which the LeaderWorkerSet's own
// webhook may not have set yet, is the ordinal of its name.
func joinGroup(p *corev1.Pod) {
	lws := p.Labels[nameLabel]
	size, ok := p.Annotations[sizeAnnotation]
	if lws == "" || !ok || p.Labels[berthv1alpha1.PodGroupNameLabel] != "" {
		return
	}
	index := p.Labels[groupIndexLabel]
	if index == "" && p.Labels[workerIndexLabel] == "0" {
		if i := strings.LastIndexByte(p.Name, '-'); i >= 0 {
			index = p.Name[i+1:]
		}
	}
	if _, err := strconv.Atoi(index); err != nil {
		return
	}
	p.Labels[berthv1alpha1.PodGroupNameLabel] = jobframework.LabelValue(lws + "-" + index)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[berthv1alpha1.PodGroupTotalCountAnnotation] = size
}
