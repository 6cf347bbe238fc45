package workload

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// ClusterQueueOf is the ClusterQueue that admitted wl, "" if none did.
func ClusterQueueOf(wl *berthv1alpha1.Workload) berthv1alpha1.ClusterQueueReference {
	if wl.Status.Admission == nil {
		return ""
	}
	return wl.Status.Admission.ClusterQueue
}

// DescribeAdmission says, per podset, how many pods run on which flavor,
// e.g. "main: 4 pods, nvidia.com/gpu on h100".
func DescribeAdmission(adm *berthv1alpha1.Admission) string {
	parts := make([]string, 0, len(adm.PodSetAssignments))
	for _, psa := range adm.PodSetAssignments {
		byFlavor := map[berthv1alpha1.ResourceFlavorReference][]string{}
		for res, f := range psa.Flavors {
			byFlavor[f] = append(byFlavor[f], string(res))
		}
		var flavors []string
		for _, f := range slices.Sorted(maps.Keys(byFlavor)) {
			slices.Sort(byFlavor[f])
			flavors = append(flavors, fmt.Sprintf("%s on %s", strings.Join(byFlavor[f], ", "), f))
		}
		parts = append(parts, fmt.Sprintf("%s: %d pods, %s", psa.Name, ptr.Deref(psa.Count, 0), strings.Join(flavors, "; ")))
	}
	return strings.Join(parts, "; ")
}

// AdmittedMessage is the message of wl's Admitted condition, admitted now
// as adm after waiting since it was queued; ready names its admission
// checks, when it had to wait for them. The job's Admitted event repeats
// it: the Workload records no event of its own admission, so that an
// admission costs the API server one write on the Workload.
func AdmittedMessage(wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission, now time.Time, ready string) string {
	msg := fmt.Sprintf("Admitted by ClusterQueue %s after waiting %s", adm.ClusterQueue, now.Sub(QueueTime(wl)).Round(time.Second))
	if ready != "" {
		msg += "; admission checks ready: " + ready
	}
	return msg + ": " + DescribeAdmission(adm)
}

// RequeueMessage is the Requeued event of wl, evicted, requeued as d
// decides.
func RequeueMessage(wl *berthv1alpha1.Workload, d RequeueDecision) string {
	if d.Deactivate != "" {
		return d.Deactivate
	}
	msg := fmt.Sprintf("Requeued in LocalQueue %s: its quota in ClusterQueue %s is released", wl.Spec.QueueName, ClusterQueueOf(wl))
	if d.At != nil {
		msg += fmt.Sprintf("; it waits until %s (backoff)", d.At.UTC().Format(time.RFC3339))
	}
	return msg
}
