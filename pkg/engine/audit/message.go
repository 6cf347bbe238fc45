package audit

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/pkg/engine/resources"
)

// namedPods is how many pods a message names; it counts the others.
const namedPods = 10

// Message says what f found, in numbers, naming the pods: what an event
// about it says.
func (f *Finding) Message() string {
	switch f.Reason {
	case ReasonBeyondAdmission:
		return fmt.Sprintf("%s of Workload %s use %s, beyond the %s that its admission in ClusterQueue %s holds for %s: %s",
			podCount(len(f.Pods)), f.Workload.Name, Describe(f.Running), Describe(f.Admitted), f.ClusterQueue, podCount(int(f.AdmittedPods)), f.podList())
	case ReasonWorkloadNotAdmitted:
		return fmt.Sprintf("Pod %s runs on node %s using %s while its Workload %s holds no quota: ClusterQueue %s (LocalQueue %s) does not count it",
			f.Pods[0].Name, f.Pods[0].Node, Describe(f.Running), f.Workload.Name, f.ClusterQueue, f.LocalQueue)
	}
	return fmt.Sprintf("Pod %s runs on node %s using %s with no Workload: ClusterQueue %s (LocalQueue %s) does not count it",
		f.Pods[0].Name, f.Pods[0].Node, Describe(f.Running), f.ClusterQueue, f.LocalQueue)
}

// podList names the first pods, with their nodes, and counts the rest.
func (f *Finding) podList() string {
	parts := make([]string, 0, min(len(f.Pods), namedPods)+1)
	for i, p := range f.Pods {
		if i == namedPods {
			parts = append(parts, fmt.Sprintf("and %d more", len(f.Pods)-namedPods))
			break
		}
		parts = append(parts, p.Name+" on "+p.Node)
	}
	return strings.Join(parts, ", ")
}

func podCount(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// Describe renders amounts for a person, resources in order: "3 cpu,
// 6Gi memory"; "nothing" for none.
func Describe(r resources.Requests) string {
	if len(r) == 0 {
		return "nothing"
	}
	parts := make([]string, 0, len(r))
	for _, name := range r.Names() {
		parts = append(parts, resources.Format(name, r[name])+" "+string(name))
	}
	return strings.Join(parts, ", ")
}
