package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// queueState is what a queue's status is computed from.
type queueState struct {
	// missingFlavors are the ResourceFlavors the queue names that do not
	// exist.
	missingFlavors []string
	// checkReason and checkMessage say why an admission check the queue
	// names keeps it inactive; empty when none does.
	checkReason, checkMessage string
	// terminating is true while the queue is being deleted.
	terminating bool
	// cohortCycle is the cycle of parentName links above the queue, if
	// its cohorts form one.
	cohortCycle string
	pending     int32
	reserving   int32
	admitted    int32
	// usage is the quota held per flavor and resource; borrowed is the
	// part of it above the nominal quota.
	usage, borrowed resources.Usage
	// share is the queue's weighted share, while fair sharing is on.
	share *int64
	// unused are the fields of the queue's spec that have no effect.
	unused []unusedSetting
}

// setClusterQueueStatus computes a ClusterQueue's status from its state.
// It reports whether the status changed, so that unchanged statuses are not
// written.
func setClusterQueueStatus(cq *berthv1alpha1.ClusterQueue, st queueState) bool {
	old := cq.Status.DeepCopy()
	cq.Status.PendingWorkloads = st.pending
	cq.Status.ReservingWorkloads = st.reserving
	cq.Status.AdmittedWorkloads = st.admitted
	usage := flavorUsage(cq.Spec.ResourceGroups, st.usage, st.borrowed)
	cq.Status.FlavorsReservation = usage
	cq.Status.FlavorsUsage = usage
	cq.Status.FairSharing = nil
	if st.share != nil {
		cq.Status.FairSharing = &berthv1alpha1.FairSharingStatus{WeightedShare: *st.share}
	}
	setActiveCondition(&cq.Status.Conditions, cq.Generation, clusterQueueActive(cq, st))
	setUnusedCondition(&cq.Status.Conditions, cq.Generation, st.unused)
	return !equality.Semantic.DeepEqual(old, &cq.Status)
}

// clusterQueueActive is the Active condition of a ClusterQueue.
func clusterQueueActive(cq *berthv1alpha1.ClusterQueue, st queueState) metav1.Condition {
	switch {
	case st.terminating:
		return inactive(berthv1alpha1.ReasonTerminating, "The ClusterQueue is being deleted; its admitted workloads run to completion")
	case len(st.missingFlavors) > 0:
		return inactive(berthv1alpha1.ReasonFlavorNotFound,
			fmt.Sprintf("ResourceFlavor %s named in spec.resourceGroups does not exist", strings.Join(st.missingFlavors, ", ")))
	case st.checkReason != "":
		return inactive(st.checkReason, st.checkMessage)
	case st.cohortCycle != "":
		return inactive(berthv1alpha1.ReasonCohortCycle,
			fmt.Sprintf("The parentName links of the cohorts above it form a cycle (%s): quota cannot flow around a loop; change one cohort's spec.parentName", st.cohortCycle))
	case cq.Spec.StopPolicy != "" && cq.Spec.StopPolicy != berthv1alpha1.None:
		return inactive(berthv1alpha1.ReasonStopped, fmt.Sprintf("The ClusterQueue is stopped (stopPolicy %s)", cq.Spec.StopPolicy))
	}
	return metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonReady, Message: "Can admit new workloads"}
}

func inactive(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: berthv1alpha1.ConditionActive, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

func setActiveCondition(conds *[]metav1.Condition, generation int64, c metav1.Condition) {
	c.ObservedGeneration = generation
	meta.SetStatusCondition(conds, c)
}

// flavorUsage lists usage per flavor and resource in the order of the
// queue's resource groups, with zeros for what is unused, so that the
// status shows the whole quota at a glance.
func flavorUsage(groups berthv1alpha1.ResourceGroups, usage, borrowed resources.Usage) []berthv1alpha1.FlavorUsage {
	var out []berthv1alpha1.FlavorUsage
	for _, g := range groups {
		for _, f := range g.Flavors {
			fu := berthv1alpha1.FlavorUsage{Name: f.Name, Resources: make([]berthv1alpha1.ResourceUsage, 0, len(g.CoveredResources))}
			for _, r := range g.CoveredResources {
				fr := resources.FlavorResource{Flavor: f.Name, Resource: r}
				fu.Resources = append(fu.Resources, berthv1alpha1.ResourceUsage{
					Name:     r,
					Total:    resources.Quantity(r, usage[fr]),
					Borrowed: resources.Quantity(r, borrowed[fr]),
				})
			}
			out = append(out, fu)
		}
	}
	return out
}

// localQueueUsage sums the quota held by a LocalQueue's admitted workloads
// per flavor.
func localQueueUsage(admissions []*berthv1alpha1.Admission) []berthv1alpha1.LocalQueueFlavorUsage {
	byFlavor := map[berthv1alpha1.ResourceFlavorReference]map[corev1.ResourceName]int64{}
	for _, adm := range admissions {
		for fr, v := range workload.AdmissionUsage(adm) {
			if byFlavor[fr.Flavor] == nil {
				byFlavor[fr.Flavor] = map[corev1.ResourceName]int64{}
			}
			byFlavor[fr.Flavor][fr.Resource] += v
		}
	}
	var out []berthv1alpha1.LocalQueueFlavorUsage
	for _, f := range slices.Sorted(maps.Keys(byFlavor)) {
		fu := berthv1alpha1.LocalQueueFlavorUsage{Name: f}
		for _, r := range slices.Sorted(maps.Keys(byFlavor[f])) {
			fu.Resources = append(fu.Resources, berthv1alpha1.ResourceUsage{Name: r, Total: resources.Quantity(r, byFlavor[f][r])})
		}
		out = append(out, fu)
	}
	return out
}

// writeQueueStatus replaces the status of a queue, which Berth alone
// writes, with a merge patch that carries every field: a patch computed as
// a diff would leave out counts that are zero from the start, and kubectl
// would show them blank.
func writeQueueStatus(ctx context.Context, c client.Client, obj client.Object, status any) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}
