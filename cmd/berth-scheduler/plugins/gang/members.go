package gang

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

// progress says how far a gang is from being complete.
type progress struct {
	// Expected is the number of live members of the gang.
	Expected int
	// Placed is the number of them that are bound or waiting at Permit,
	// counting the pod at Permit itself.
	Placed int
}

// complete reports whether every live member has a node.
func (p progress) complete() bool { return p.Placed >= p.Expected }

// countProgress counts the members of the gang of pod, which is at Permit
// now. members are the pods with the gang's labels from the pod lister;
// waiting are the UIDs of members waiting at Permit. The pod itself counts
// even when the lister has not seen it yet.
//
// Until one member is bound, the gang is at least as large as the size
// annotation says: the Job controller creates a gang's pods in batches, and
// the first ones must not go ahead alone. Once the gang runs, pods that
// replace finished members only wait for the live ones.
func countProgress(pod *corev1.Pod, members []*corev1.Pod, waiting sets.Set[types.UID]) progress {
	p := progress{Expected: 1, Placed: 1}
	started := false
	for _, m := range members {
		if m.UID == pod.UID || !live(m) {
			continue
		}
		p.Expected++
		if m.Spec.NodeName != "" {
			started = true
		}
		if m.Spec.NodeName != "" || waiting.Has(m.UID) {
			p.Placed++
		}
	}
	if size, ok := podset.Size(pod); ok && !started && size > p.Expected {
		p.Expected = size
	}
	return p
}

// live reports whether a pod still needs a node or holds one: pods that
// finished or are being deleted are no longer part of the gang, and pods
// that still carry a scheduling gate are not yet (those an elastic job
// added wait for quota, and the gang runs without them).
func live(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || len(pod.Spec.SchedulingGates) > 0 {
		return false
	}
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}
