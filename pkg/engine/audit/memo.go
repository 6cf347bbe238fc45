package audit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Memo remembers, from one audit to the next, what each running pod
// requests and what each admitted Workload holds, per resource. Computing
// them afresh is most of an audit's cost (BenchmarkCompare), and neither
// changes while a pod runs or a Workload holds quota: an answer is kept
// for as long as its object keeps its resourceVersion, and forgotten after
// an audit that did not ask for it. It is not safe for concurrent use.
type Memo struct {
	pods      map[types.UID]*remembered
	workloads map[types.UID]*remembered
	// audit counts the audits that used it.
	audit uint64
}

type remembered struct {
	resourceVersion string
	amounts         resources.Requests
	// seen is the last audit that asked for it.
	seen uint64
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo {
	return &Memo{pods: map[types.UID]*remembered{}, workloads: map[types.UID]*remembered{}}
}

// requests is what pod requests: workload.RunningPodRequests.
func (m *Memo) requests(pod *corev1.Pod) resources.Requests {
	if r := m.known(m.pods, pod.UID, pod.ResourceVersion); r != nil {
		return r
	}
	return m.keep(m.pods, pod.UID, pod.ResourceVersion, workload.RunningPodRequests(pod))
}

// admitted is what the admission of wl holds, per resource.
func (m *Memo) admitted(wl *berthv1alpha1.Workload) resources.Requests {
	if r := m.known(m.workloads, wl.UID, wl.ResourceVersion); r != nil {
		return r
	}
	return m.keep(m.workloads, wl.UID, wl.ResourceVersion, workload.AdmissionUsage(wl.Status.Admission).ByResource())
}

// known is what is remembered of the object uid at resourceVersion, nil if
// nothing is.
func (m *Memo) known(known map[types.UID]*remembered, uid types.UID, resourceVersion string) resources.Requests {
	r, ok := known[uid]
	if !ok || uid == "" || r.resourceVersion != resourceVersion {
		return nil
	}
	r.seen = m.audit
	return r.amounts
}

// keep remembers amounts for the object uid at resourceVersion, unless it
// has neither, and returns them.
func (m *Memo) keep(known map[types.UID]*remembered, uid types.UID, resourceVersion string, amounts resources.Requests) resources.Requests {
	if uid != "" && resourceVersion != "" {
		known[uid] = &remembered{resourceVersion: resourceVersion, amounts: amounts, seen: m.audit}
	}
	return amounts
}

// begin starts an audit.
func (m *Memo) begin() {
	m.audit++
}

// end forgets what the audit did not ask for.
func (m *Memo) end() {
	for _, known := range []map[types.UID]*remembered{m.pods, m.workloads} {
		for uid, r := range known {
			if r.seen != m.audit {
				delete(known, uid)
			}
		}
	}
}
