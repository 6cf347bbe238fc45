package audit

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Reasons a pod is named in a finding.
const (
	// ReasonBeyondAdmission: the pods of an admitted Workload use more of
	// a resource than its admission holds.
	ReasonBeyondAdmission = "BeyondAdmission"
	// ReasonWorkloadNotAdmitted: the pod's Workload holds no quota.
	ReasonWorkloadNotAdmitted = "WorkloadNotAdmitted"
	// ReasonNoWorkload: the pod names a LocalQueue and belongs to no
	// Workload.
	ReasonNoWorkload = "NoWorkload"
)

// Input is what Compare compares. Its objects are read, never changed: they
// may be an informer's own.
type Input struct {
	Pods        []*corev1.Pod
	Workloads   []*berthv1alpha1.Workload
	LocalQueues []*berthv1alpha1.LocalQueue
	// Managed reports whether Berth holds the queued pods of a namespace
	// (the pod integration's namespace selector); nil for every namespace.
	// A pod with the queue label in another namespace is not Berth's to
	// count, unless it belongs to a Workload.
	Managed func(namespace string) bool
	// Memo, when set, remembers the pods' requests and the admissions'
	// amounts from one audit to the next.
	Memo *Memo
}

// Report is what Compare found: the ClusterQueues whose pods use what no
// admission holds, by name. It is empty when all is well.
type Report struct {
	ClusterQueues []ClusterQueue
}

// ClusterQueue is what was found in one ClusterQueue. Admitted, Running and
// Unaccounted sum its findings, per resource they exceed: what their
// admissions hold, what their pods use, and the difference.
type ClusterQueue struct {
	Name                           string
	Admitted, Running, Unaccounted resources.Requests
	Findings                       []Finding
}

// Finding is one way pods run beyond what was admitted: the pods of one
// admitted Workload that use more than its admission holds
// (ReasonBeyondAdmission), or one pod that runs with no admitted Workload.
type Finding struct {
	ClusterQueue string
	Reason       string
	// Workload is the Workload the pods belong to; nil for
	// ReasonNoWorkload.
	Workload *berthv1alpha1.Workload
	// LocalQueue is the LocalQueue, in the pods' namespace, through which
	// a pod with no admitted Workload is counted in ClusterQueue.
	LocalQueue string
	// AdmittedPods is how many pods the admission holds quota for.
	AdmittedPods int32
	// Admitted and Running are what the admission holds (nothing for a pod
	// with no admitted Workload) and what the pods use, of each resource
	// the pods use more of than the admission holds.
	Admitted, Running resources.Requests
	// Pods are the running pods, by namespace and name.
	Pods []Pod
}

// Pod is a running pod named in a finding.
type Pod struct {
	Namespace, Name string
	UID             types.UID
	Node            string
	// Requests are all of the pod's requests; read them, never change
	// them: Input.Memo keeps them for the next audit.
	Requests resources.Requests
}

// Unaccounted is what the finding's pods use beyond what is admitted, per
// resource.
func (f *Finding) Unaccounted() resources.Requests {
	out := make(resources.Requests, len(f.Running))
	for name, v := range f.Running {
		out[name] = v - f.Admitted[name]
	}
	return out
}

// Compare finds the running pods of in whose use no admission holds.
func Compare(in Input) Report {
	memo := in.Memo
	if memo == nil {
		memo = NewMemo()
	}
	memo.begin()
	defer memo.end()
	ix := newIndex(in.Workloads, in.LocalQueues)
	ix.memo = memo
	// ofAdmitted is the admitted Workload of each pod, if it has one, and
	// running what each admitted Workload's pods use.
	ofAdmitted := make([]*berthv1alpha1.Workload, len(in.Pods))
	running := make(map[workloadResource]int64, len(in.Pods))
	var found []Finding
	for i, pod := range in.Pods {
		if !runs(pod) {
			continue
		}
		wl := ix.workloadOf(pod)
		switch {
		case wl != nil && holdsQuota(wl):
			ofAdmitted[i] = wl
			requests := memo.requests(pod)
			for name := range memo.admitted(wl) {
				k := workloadResource{wl, name}
				running[k] = resources.Add(running[k], requests[name])
			}
		case wl != nil:
			found = ix.appendUnadmitted(found, pod, wl, string(wl.Spec.QueueName), ReasonWorkloadNotAdmitted)
		case pod.Labels[berthv1alpha1.QueueNameLabel] != "" && (in.Managed == nil || in.Managed(pod.Namespace)):
			found = ix.appendUnadmitted(found, pod, nil, pod.Labels[berthv1alpha1.QueueNameLabel], ReasonNoWorkload)
		}
	}
	return byClusterQueue(append(found, ix.beyondAdmission(running, in.Pods, ofAdmitted)...))
}

// workloadResource is one resource of one admitted Workload.
type workloadResource struct {
	wl   *berthv1alpha1.Workload
	name corev1.ResourceName
}

// runs reports whether pod holds resources on a node: it is bound and
// has not succeeded or failed.
func runs(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// holdsQuota reports whether wl holds quota in a ClusterQueue, as Berth's
// cache counts it: reserved (or admitted) and not finished.
func holdsQuota(wl *berthv1alpha1.Workload) bool {
	return wl.Status.Admission != nil && workload.HasQuotaReservation(wl) && !workload.IsFinished(wl)
}

// beyondAdmission is the findings of the admitted Workloads whose pods use
// more of some resource than their admission holds, given what their pods
// use (running) and the admitted Workload of each pod (ofAdmitted).
func (ix *index) beyondAdmission(running map[workloadResource]int64, pods []*corev1.Pod, ofAdmitted []*berthv1alpha1.Workload) []Finding {
	beyond := map[*berthv1alpha1.Workload]*Finding{}
	for k, v := range running {
		admitted := ix.memo.admitted(k.wl)[k.name]
		if v <= admitted {
			continue
		}
		f := beyond[k.wl]
		if f == nil {
			f = &Finding{ClusterQueue: string(k.wl.Status.Admission.ClusterQueue), Reason: ReasonBeyondAdmission, Workload: k.wl,
				Admitted: resources.Requests{}, Running: resources.Requests{}}
			for _, psa := range k.wl.Status.Admission.PodSetAssignments {
				f.AdmittedPods += admittedCount(k.wl, psa)
			}
			beyond[k.wl] = f
		}
		f.Admitted[k.name], f.Running[k.name] = admitted, v
	}
	if len(beyond) == 0 {
		return nil
	}
	for i, wl := range ofAdmitted {
		if f := beyond[wl]; f != nil {
			f.Pods = append(f.Pods, ix.podOf(pods[i]))
		}
	}
	out := make([]Finding, 0, len(beyond))
	for _, f := range beyond {
		slices.SortFunc(f.Pods, func(a, b Pod) int { return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) })
		out = append(out, *f)
	}
	return out
}

// admittedCount is the number of pods psa admits: its count, or its
// podset's when it has none.
func admittedCount(wl *berthv1alpha1.Workload, psa berthv1alpha1.PodSetAssignment) int32 {
	if psa.Count != nil {
		return *psa.Count
	}
	for _, ps := range wl.Spec.PodSets {
		if ps.Name == psa.Name {
			return ps.Count
		}
	}
	return 0
}

// appendUnadmitted appends the finding of pod, which runs with no admitted
// Workload (wl, if it has one, holds no quota), counted in the ClusterQueue
// of its LocalQueue. A pod whose LocalQueue is not known cannot be
// counted in any ClusterQueue, and is left out.
func (ix *index) appendUnadmitted(found []Finding, pod *corev1.Pod, wl *berthv1alpha1.Workload, localQueue, reason string) []Finding {
	cq := ix.clusterQueues[types.NamespacedName{Namespace: pod.Namespace, Name: localQueue}]
	if cq == "" {
		return found
	}
	p := ix.podOf(pod)
	return append(found, Finding{ClusterQueue: cq, Reason: reason, Workload: wl, LocalQueue: localQueue,
		Admitted: resources.Requests{}, Running: maps.Clone(p.Requests), Pods: []Pod{p}})
}

func (ix *index) podOf(pod *corev1.Pod) Pod {
	return Pod{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName, Requests: ix.memo.requests(pod)}
}

// byClusterQueue groups found by ClusterQueue, with their sums, in order
// of names; a ClusterQueue's findings in order of their first pod.
func byClusterQueue(found []Finding) Report {
	byName := map[string]*ClusterQueue{}
	for _, f := range found {
		cq := byName[f.ClusterQueue]
		if cq == nil {
			cq = &ClusterQueue{Name: f.ClusterQueue, Admitted: resources.Requests{}, Running: resources.Requests{}, Unaccounted: resources.Requests{}}
			byName[f.ClusterQueue] = cq
		}
		cq.Admitted.Add(f.Admitted)
		cq.Running.Add(f.Running)
		cq.Unaccounted.Add(f.Unaccounted())
		cq.Findings = append(cq.Findings, f)
	}
	r := Report{ClusterQueues: make([]ClusterQueue, 0, len(byName))}
	for _, cq := range byName {
		slices.SortFunc(cq.Findings, func(a, b Finding) int {
			return cmp.Or(cmp.Compare(a.Pods[0].Namespace, b.Pods[0].Namespace), cmp.Compare(a.Pods[0].Name, b.Pods[0].Name))
		})
		r.ClusterQueues = append(r.ClusterQueues, *cq)
	}
	slices.SortFunc(r.ClusterQueues, func(a, b ClusterQueue) int { return cmp.Compare(a.Name, b.Name) })
	return r
}
