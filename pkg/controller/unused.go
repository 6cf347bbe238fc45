package controller

import (
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Features are the controller configuration's switches that give fields of
// the queues' and cohorts' specs their effect.
type Features struct {
	// FairSharing is fairSharing.enable: it gives spec.fairSharing of
	// ClusterQueues and Cohorts its effect.
	FairSharing bool
	// AdmissionFairSharing is the presence of admissionFairSharing: it
	// gives a ClusterQueue's spec.admissionScope, and a LocalQueue's
	// spec.fairSharing, their effect.
	AdmissionFairSharing bool
}

// unusedSetting is a field with no effect: why (a condition reason) and
// what to tell.
type unusedSetting struct {
	reason, message string
}

// disabled is a field whose feature the configuration turns off.
func disabled(message string) unusedSetting {
	return unusedSetting{reason: berthv1alpha1.ReasonFeatureDisabled, message: message}
}

// reasonAndMessage is the condition's reason (the first setting's) and
// message (all of them).
func reasonAndMessage(unused []unusedSetting) (string, string) {
	msgs := make([]string, len(unused))
	for i, u := range unused {
		msgs[i] = u.message
	}
	return unused[0].reason, strings.Join(msgs, "; ")
}

const (
	fairSharingOff          = "fair sharing is off in the controller configuration (set fairSharing.enable: true to turn it on)"
	admissionFairSharingOff = "admission fair sharing is off in the controller configuration (add an admissionFairSharing section to turn it on)"
)

// unusedInClusterQueue says which fields of cq have no effect under f.
func (f Features) unusedInClusterQueue(cq *berthv1alpha1.ClusterQueue) []unusedSetting {
	var out []unusedSetting
	if cq.Spec.FairSharing != nil && !f.FairSharing {
		out = append(out, disabled("spec.fairSharing has no effect: "+fairSharingOff))
	}
	if s := cq.Spec.AdmissionScope; s != nil && s.AdmissionMode == berthv1alpha1.UsageBasedAdmissionFairSharing && !f.AdmissionFairSharing {
		out = append(out, disabled("spec.admissionScope has no effect: "+admissionFairSharingOff))
	}
	if cq.Spec.ConcurrentAdmissionPolicy != nil {
		out = append(out, unusedSetting{reason: berthv1alpha1.ReasonNotSupported, message: "spec.concurrentAdmissionPolicy has no effect: " +
			"Berth admits a workload once, in the first flavor of spec.resourceGroups that fits, and neither tries several flavors at once nor moves a running workload to a better one"})
	}
	return out
}

// unusedInCohort says which fields of c have no effect under f.
func (f Features) unusedInCohort(c *berthv1alpha1.Cohort) []unusedSetting {
	if c.Spec.FairSharing != nil && !f.FairSharing {
		return []unusedSetting{disabled("spec.fairSharing has no effect: " + fairSharingOff)}
	}
	return nil
}

// unusedInLocalQueue says which fields of lq have no effect under f.
func (f Features) unusedInLocalQueue(lq *berthv1alpha1.LocalQueue) []unusedSetting {
	if lq.Spec.FairSharing != nil && !f.AdmissionFairSharing {
		return []unusedSetting{disabled("spec.fairSharing has no effect: " + admissionFairSharingOff)}
	}
	return nil
}

// setUnusedCondition sets the UnusedSettings condition to what unused
// says, and removes it when nothing is unused. It reports whether the
// conditions changed.
func setUnusedCondition(conds *[]metav1.Condition, generation int64, unused []unusedSetting) bool {
	if len(unused) == 0 {
		return meta.RemoveStatusCondition(conds, berthv1alpha1.ConditionUnusedSettings)
	}
	reason, msg := reasonAndMessage(unused)
	return meta.SetStatusCondition(conds, metav1.Condition{
		Type: berthv1alpha1.ConditionUnusedSettings, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: generation,
	})
}

// unusedWarnings tells, once per generation of an object, which of its
// fields have no effect, in a Warning event: a Cohort has no status to
// hold a condition, and a person who just applied a queue looks at its
// events.
type unusedWarnings struct {
	recorder events.EventRecorder
	mu       sync.Mutex
	told     map[string]int64
}

func newUnusedWarnings(recorder events.EventRecorder) *unusedWarnings {
	return &unusedWarnings{recorder: recorder, told: map[string]int64{}}
}

// tell warns about obj's unused fields if it has not for this generation.
// A nil unusedWarnings tells nothing.
func (w *unusedWarnings) tell(obj client.Object, unused []unusedSetting) {
	if w == nil {
		return
	}
	key := obj.GetNamespace() + "/" + obj.GetName()
	w.mu.Lock()
	told := w.told[key] == obj.GetGeneration()
	w.told[key] = obj.GetGeneration()
	w.mu.Unlock()
	if told || len(unused) == 0 {
		return
	}
	reason, msg := reasonAndMessage(unused)
	w.recorder.Eventf(obj.(runtime.Object), nil, corev1.EventTypeWarning, reason, "Configure", "%s", msg)
}

// forget drops what was told about a deleted object.
func (w *unusedWarnings) forget(namespace, name string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.told, namespace+"/"+name)
}
