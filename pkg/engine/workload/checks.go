package workload

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// FindCheck returns the state of the check named name, nil if wl has none.
func FindCheck(wl *berthv1alpha1.Workload, name berthv1alpha1.AdmissionCheckReference) *berthv1alpha1.AdmissionCheckState {
	for i := range wl.Status.AdmissionChecks {
		if wl.Status.AdmissionChecks[i].Name == name {
			return &wl.Status.AdmissionChecks[i]
		}
	}
	return nil
}

// ChecksReady reports whether every admission check of wl is Ready (true
// for none).
func ChecksReady(wl *berthv1alpha1.Workload) bool {
	for _, c := range wl.Status.AdmissionChecks {
		if c.State != berthv1alpha1.CheckStateReady {
			return false
		}
	}
	return true
}

// FailedCheck returns the first check of wl that is Rejected or, failing
// that, asks for a Retry; nil if none does.
func FailedCheck(wl *berthv1alpha1.Workload) *berthv1alpha1.AdmissionCheckState {
	var retry *berthv1alpha1.AdmissionCheckState
	for i := range wl.Status.AdmissionChecks {
		switch c := &wl.Status.AdmissionChecks[i]; c.State {
		case berthv1alpha1.CheckStateRejected:
			return c
		case berthv1alpha1.CheckStateRetry:
			if retry == nil {
				retry = c
			}
		}
	}
	return retry
}

// CheckFailureMessage says why a check that failed evicts the workload.
func CheckFailureMessage(c *berthv1alpha1.AdmissionCheckState) string {
	if c.State == berthv1alpha1.CheckStateRejected {
		return fmt.Sprintf("Rejected by admission check %s: %s", c.Name, c.Message)
	}
	return fmt.Sprintf("Admission check %s asks to try again: %s", c.Name, c.Message)
}

// SetCheckState sets the state of one check and reports whether it
// changed.
func SetCheckState(wl *berthv1alpha1.Workload, st berthv1alpha1.AdmissionCheckState) bool {
	cur := FindCheck(wl, st.Name)
	if cur == nil {
		if st.LastTransitionTime.IsZero() {
			st.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
		}
		wl.Status.AdmissionChecks = append(wl.Status.AdmissionChecks, st)
		return true
	}
	if cur.State == st.State && cur.Message == st.Message && ptr.Equal(cur.RequeueAfterSeconds, st.RequeueAfterSeconds) &&
		equalUpdates(cur.PodSetUpdates, st.PodSetUpdates) {
		return false
	}
	if cur.State != st.State || st.LastTransitionTime.IsZero() {
		st.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	}
	*cur = st
	return true
}

func equalUpdates(a, b []berthv1alpha1.PodSetUpdate) bool {
	return slices.EqualFunc(a, b, func(x, y berthv1alpha1.PodSetUpdate) bool {
		return fmt.Sprint(x) == fmt.Sprint(y)
	})
}

// setChecksPending puts every check named in checks in state Pending and
// drops the others: a new reservation is checked afresh.
func setChecksPending(wl *berthv1alpha1.Workload, checks []berthv1alpha1.AdmissionCheckReference, message string) bool {
	changed := len(wl.Status.AdmissionChecks) != len(checks)
	states := make([]berthv1alpha1.AdmissionCheckState, 0, len(checks))
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for _, name := range checks {
		st := berthv1alpha1.AdmissionCheckState{Name: name, State: berthv1alpha1.CheckStatePending, LastTransitionTime: now, Message: message}
		if cur := FindCheck(wl, name); cur != nil && cur.State == st.State && cur.Message == message && len(cur.PodSetUpdates) == 0 {
			st.LastTransitionTime = cur.LastTransitionTime
		} else {
			changed = true
		}
		states = append(states, st)
	}
	wl.Status.AdmissionChecks = states
	return changed
}

// checkNames lists the names of wl's checks, with their states.
func checkNames(wl *berthv1alpha1.Workload) string {
	parts := make([]string, 0, len(wl.Status.AdmissionChecks))
	for _, c := range wl.Status.AdmissionChecks {
		parts = append(parts, fmt.Sprintf("%s (%s)", c.Name, c.State))
	}
	return strings.Join(parts, ", ")
}

// AdmitChecked admits a workload whose quota is reserved once all its
// checks are Ready.
func AdmitChecked() Change {
	return func(wl *berthv1alpha1.Workload) bool {
		if wl.Status.Admission == nil || !ChecksReady(wl) {
			return false
		}
		return setAdmitted(wl, wl.Status.Admission, checkNames(wl))
	}
}

// ChecksFor lists the admission checks of cq that apply to a workload
// admitted as adm: all of spec.admissionChecks, and the rules of
// spec.admissionChecksStrategy for no flavor in particular or for one that
// adm uses.
func ChecksFor(cq *berthv1alpha1.ClusterQueue, adm *berthv1alpha1.Admission) []berthv1alpha1.AdmissionCheckReference {
	out := slices.Clone(cq.Spec.AdmissionChecks)
	if s := cq.Spec.AdmissionChecksStrategy; s != nil {
		used := map[berthv1alpha1.ResourceFlavorReference]bool{}
		for _, psa := range adm.PodSetAssignments {
			for _, f := range psa.Flavors {
				used[f] = true
			}
		}
		for _, rule := range s.AdmissionChecks {
			if len(rule.OnFlavors) == 0 || slices.ContainsFunc(rule.OnFlavors, func(f berthv1alpha1.ResourceFlavorReference) bool { return used[f] }) {
				out = append(out, rule.Name)
			}
		}
	}
	return out
}

// ChecksNamed lists every admission check cq names, for any flavor.
func ChecksNamed(cq *berthv1alpha1.ClusterQueue) []berthv1alpha1.AdmissionCheckReference {
	names := slices.Clone(cq.Spec.AdmissionChecks)
	if s := cq.Spec.AdmissionChecksStrategy; s != nil {
		for _, r := range s.AdmissionChecks {
			names = append(names, r.Name)
		}
	}
	return names
}
