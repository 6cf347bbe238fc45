package auditor

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/audit"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/metrics"
)

// ReasonUnaccountedPods is the reason of the Warning event on the owner of
// pods that run beyond what was admitted.
const ReasonUnaccountedPods = "UnaccountedPods"

// teller tells what the audits find: the metric, and an event for each
// finding the audit before did not have.
type teller struct {
	recorder events.EventRecorder
	// series are the metric's series that the last audit set.
	series map[series]bool
	// told are the keys of the findings of the last audit.
	told map[string]bool
}

type series struct {
	clusterQueue string
	resource     corev1.ResourceName
}

func newTeller(recorder events.EventRecorder) *teller {
	return &teller{recorder: recorder, series: map[series]bool{}, told: map[string]bool{}}
}

// tell sets the metric from report, 0 for every resource that a
// ClusterQueue of cqs covers and report does not name, and records an event
// for each new finding.
func (t *teller) tell(ctx context.Context, report audit.Report, cqs []*berthv1alpha1.ClusterQueue) {
	t.setMetric(report, cqs)
	log := ctrl.LoggerFrom(ctx)
	told := map[string]bool{}
	for _, cq := range report.ClusterQueues {
		for i := range cq.Findings {
			f := &cq.Findings[i]
			key := keyOf(f)
			told[key] = true
			if t.told[key] {
				continue
			}
			msg := f.Message()
			log.Info("Pods run beyond what was admitted", "clusterQueue", cq.Name, "reason", f.Reason, "message", msg)
			t.recorder.Eventf(regarding(f), nil, corev1.EventTypeWarning, ReasonUnaccountedPods, "Audit", "%s", msg)
		}
	}
	t.told = told
}

func (t *teller) setMetric(report audit.Report, cqs []*berthv1alpha1.ClusterQueue) {
	values := map[series]float64{}
	for _, cq := range cqs {
		for _, rg := range cq.Spec.ResourceGroups {
			for _, name := range rg.CoveredResources {
				values[series{cq.Name, name}] = 0
			}
		}
	}
	for _, cq := range report.ClusterQueues {
		for name, v := range cq.Unaccounted {
			q := resources.Quantity(name, v)
			values[series{cq.Name, name}] = q.AsApproximateFloat64()
		}
	}
	for s := range t.series {
		if _, ok := values[s]; !ok {
			metrics.UnaccountedResources.DeleteLabelValues(metrics.CQ(s.clusterQueue, string(s.resource))...)
			delete(t.series, s)
		}
	}
	for s, v := range values {
		metrics.UnaccountedResources.WithLabelValues(metrics.CQ(s.clusterQueue, string(s.resource))...).Set(v)
		t.series[s] = true
	}
}

// keyOf is what makes a finding the same as one told before: its reason,
// ClusterQueue, Workload and pods.
func keyOf(f *audit.Finding) string {
	parts := []string{f.Reason, f.ClusterQueue}
	if f.Workload != nil {
		parts = append(parts, string(f.Workload.UID), f.Workload.Namespace, f.Workload.Name)
	}
	for _, p := range f.Pods {
		parts = append(parts, string(p.UID), p.Namespace, p.Name)
	}
	return strings.Join(parts, "/")
}

// regarding is the object a finding's event is about: the job that owns
// the Workload whose pods use more than it was admitted for (the Workload
// itself when it has no controller, as a pod group's), or the one pod that
// runs with no admitted Workload.
func regarding(f *audit.Finding) *corev1.ObjectReference {
	if f.Reason != audit.ReasonBeyondAdmission {
		p := f.Pods[0]
		return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
	}
	wl := f.Workload
	if owner := metav1.GetControllerOf(wl); owner != nil {
		return &corev1.ObjectReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Namespace: wl.Namespace, Name: owner.Name, UID: owner.UID}
	}
	return &corev1.ObjectReference{APIVersion: berthv1alpha1.GroupVersion.String(), Kind: "Workload", Namespace: wl.Namespace, Name: wl.Name, UID: wl.UID}
}
