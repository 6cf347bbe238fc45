package flavorassigner

import (
	"fmt"
	"strings"

	"github.com/berth-dev/berth/pkg/engine/resources"
)

// Message explains, per flavor tried, why the workload did not fit
// outright, e.g. "podset main: flavor h100: needs 16 nvidia.com/gpu, 6
// available (nominal 8, in use 10, cohort can lend 8, borrowingLimit 4)".
// It is empty when the assignment fits outright.
func (a *Assignment) Message() string {
	if len(a.misses) == 0 {
		return ""
	}
	parts := make([]string, 0, len(a.misses))
	seen := map[string]bool{}
	for _, m := range a.misses {
		s := m.String()
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

func (m miss) String() string {
	prefix := "podset " + m.podSet + ": "
	switch m.kind {
	case missTaint:
		return fmt.Sprintf("%sflavor %s: untolerated taint %s", prefix, m.flavor, m.taint.ToString())
	case missSelector:
		return fmt.Sprintf("%sflavor %s: node selector %s does not match the flavor's node labels", prefix, m.flavor, m.label)
	case missUncovered:
		return fmt.Sprintf("%sresource %s is not covered by any flavor of the ClusterQueue", prefix, m.resource)
	case missPinned:
		if m.flavor == "" {
			return prefix + "the slice's job runs in no flavor of the ClusterQueue that covers this resource"
		}
		return fmt.Sprintf("%sflavor %s, in which the slice's job runs, is no longer one of the ClusterQueue's", prefix, m.flavor)
	case missTopology:
		return fmt.Sprintf("%sflavor %s: %s", prefix, m.flavor, m.topology)
	case missFlavorNotFound:
		return fmt.Sprintf("%sflavor %s: ResourceFlavor not found", prefix, m.flavor)
	}
	d, r := m.detail, m.resource
	f := func(v int64) string { return resources.Format(r, v) }
	s := fmt.Sprintf("%sflavor %s: needs %s %s, %s available (nominal %s, in use %s", prefix, m.flavor, f(m.need), r, f(d.Available), f(d.Nominal), f(d.Used))
	if d.Reserved > 0 {
		s += ", reserved for a preemptor " + f(d.Reserved)
	}
	if d.HasCohort {
		s += ", cohort can lend " + f(d.CohortCanLend)
		if d.BorrowingLimit != nil {
			s += ", borrowingLimit " + f(*d.BorrowingLimit)
		}
	}
	return s + ")"
}
