package multicluster

import (
	"context"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/jobs/pod"
)

// kind is what dispatch needs to know of one kind of job: which objects in
// the manager make it (its members: one Job or JobSet, or the pods of a
// pod group), how to copy each to a worker, and how to bring each copy's
// status back.
type kind struct {
	gvk       schema.GroupVersionKind
	newObject func() client.Object
	newList   func() client.ObjectList
	// members are the manager's objects of the job that wl's owner
	// reference names name, but those being deleted: none once it is gone.
	members func(ctx context.Context, c client.Reader, wl *berthv1alpha1.Workload, name string) ([]client.Object, error)
	// refuse says why check cannot dispatch the job of members, "" when
	// it can.
	refuse func(members []client.Object, check string) string
	// workloadName is the name of the Workload of the job obj is a member
	// of, in the cluster obj is in: the manager's for a member, the
	// worker's for a copy.
	workloadName func(obj client.Object) string
	// watched passes the events of the manager's members that the
	// dispatcher follows.
	watched predicate.Predicate
	// held reports whether the manager holds a dispatched member: a Job
	// or JobSet (with dispatch's spec.managedBy) it has not run, a pod at
	// its gate. Its status is emptied
	// once its workload is back in the queue.
	held func(obj client.Object) bool
	// mirrored reports whether the member gets its copy's status now: a
	// Job or JobSet once the manager runs it, a pod (held throughout)
	// once its workload is admitted.
	mirrored func(wl *berthv1alpha1.Workload, obj client.Object) bool
	// spec sets the copy's spec from the member's: held (suspended or
	// gated) until the worker's Berth admits it.
	spec func(obj, copy client.Object)
	// mirror sets the member's status to its copy's; it reports whether
	// that changed it.
	mirror func(obj, copy client.Object) bool
	// clear empties the status of a member that no worker runs any
	// longer; it reports whether that changed it.
	clear func(obj client.Object) bool
	// podLabel is the label whose value is a Job's or a JobSet's UID on
	// the pods its controller makes: a copy's pods are deleted with it,
	// not left to the worker's garbage collector (whose controller manager
	// may be minutes from leading again when the worker comes back).
	podLabel string
	// started reports whether a Job or JobSet is not suspended: it may
	// have pods.
	started func(obj client.Object) bool
}

func jobStarted(obj client.Object) bool { return !ptr.Deref(obj.(*batchv1.Job).Spec.Suspend, false) }

func jobSetStarted(obj client.Object) bool {
	return !ptr.Deref(obj.(*jobsetv1alpha2.JobSet).Spec.Suspend, false)
}

// kinds are the kinds of job dispatch handles.
var kinds = []kind{jobKind, jobSetKind, podKind}

var jobKind = kind{
	gvk:       batchv1.SchemeGroupVersion.WithKind("Job"),
	newObject: func() client.Object { return &batchv1.Job{} },
	newList:   func() client.ObjectList { return &batchv1.JobList{} },
	members:   named(func() client.Object { return &batchv1.Job{} }),
	refuse:    managedByUs("Job", func(obj client.Object) *string { return obj.(*batchv1.Job).Spec.ManagedBy }),
	workloadName: func(obj client.Object) string {
		return jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), obj.GetName(), string(obj.GetUID()))
	},
	watched: handedOver(func(obj client.Object) *string { return obj.(*batchv1.Job).Spec.ManagedBy }),
	held: func(obj client.Object) bool {
		job := obj.(*batchv1.Job)
		return ptr.Deref(job.Spec.Suspend, false) && ptr.Deref(job.Spec.ManagedBy, "") == berthv1alpha1.MultiClusterControllerName
	},
	mirrored: func(_ *berthv1alpha1.Workload, obj client.Object) bool { return jobStarted(obj) },
	started:  jobStarted,
	spec: func(obj, copyObj client.Object) {
		job, c := obj.(*batchv1.Job), copyObj.(*batchv1.Job)
		job.Spec.DeepCopyInto(&c.Spec)
		c.Spec.ManagedBy, c.Spec.Suspend = nil, ptr.To(true)
		if !ptr.Deref(c.Spec.ManualSelector, false) {
			// The worker's API server makes its own selector, on the
			// copy's UID.
			c.Spec.Selector = nil
			for _, l := range []string{batchv1.ControllerUidLabel, batchv1.JobNameLabel, "controller-uid", "job-name"} {
				delete(c.Spec.Template.Labels, l)
			}
		}
	},
	mirror:   mirrorStatus(func(obj client.Object) *batchv1.JobStatus { return &obj.(*batchv1.Job).Status }),
	clear:    clearStatus(func(obj client.Object) *batchv1.JobStatus { return &obj.(*batchv1.Job).Status }),
	podLabel: batchv1.ControllerUidLabel,
}

var jobSetKind = kind{
	gvk:       jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet"),
	newObject: func() client.Object { return &jobsetv1alpha2.JobSet{} },
	newList:   func() client.ObjectList { return &jobsetv1alpha2.JobSetList{} },
	members:   named(func() client.Object { return &jobsetv1alpha2.JobSet{} }),
	refuse:    managedByUs("JobSet", func(obj client.Object) *string { return obj.(*jobsetv1alpha2.JobSet).Spec.ManagedBy }),
	workloadName: func(obj client.Object) string {
		return jobframework.WorkloadName(jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet"), obj.GetName(), string(obj.GetUID()))
	},
	watched: handedOver(func(obj client.Object) *string { return obj.(*jobsetv1alpha2.JobSet).Spec.ManagedBy }),
	held: func(obj client.Object) bool {
		js := obj.(*jobsetv1alpha2.JobSet)
		return ptr.Deref(js.Spec.Suspend, false) && ptr.Deref(js.Spec.ManagedBy, "") == berthv1alpha1.MultiClusterControllerName
	},
	mirrored: func(_ *berthv1alpha1.Workload, obj client.Object) bool { return jobSetStarted(obj) },
	started:  jobSetStarted,
	spec: func(obj, copyObj client.Object) {
		js, c := obj.(*jobsetv1alpha2.JobSet), copyObj.(*jobsetv1alpha2.JobSet)
		js.Spec.DeepCopyInto(&c.Spec)
		c.Spec.ManagedBy, c.Spec.Suspend = nil, ptr.To(true)
	},
	mirror:   mirrorStatus(func(obj client.Object) *jobsetv1alpha2.JobSetStatus { return &obj.(*jobsetv1alpha2.JobSet).Status }),
	clear:    clearStatus(func(obj client.Object) *jobsetv1alpha2.JobSetStatus { return &obj.(*jobsetv1alpha2.JobSet).Status }),
	podLabel: jobsetv1alpha2.JobSetUIDKey,
}

// podKind is plain pods and pod groups. A pod cannot be handed to another
// controller as a Job can: the manager's pods stay at Berth's gate while
// their copies run, and take their copies' status.
var podKind = kind{
	gvk:       corev1.SchemeGroupVersion.WithKind("Pod"),
	newObject: func() client.Object { return &corev1.Pod{} },
	newList:   func() client.ObjectList { return &corev1.PodList{} },
	members: func(ctx context.Context, c client.Reader, wl *berthv1alpha1.Workload, name string) ([]client.Object, error) {
		group := wl.Labels[berthv1alpha1.PodGroupNameLabel]
		if group == "" {
			return named(func() client.Object { return &corev1.Pod{} })(ctx, c, wl, name)
		}
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace(wl.Namespace), client.MatchingLabels{berthv1alpha1.PodGroupNameLabel: group}); err != nil {
			return nil, err
		}
		var out []client.Object
		for i := range list.Items {
			if p := &list.Items[i]; p.DeletionTimestamp.IsZero() {
				out = append(out, p)
			}
		}
		return out, nil
	},
	refuse: func(members []client.Object, check string) string {
		for _, m := range members {
			if ref := metav1.GetControllerOf(m); ref != nil {
				return "Pod " + m.GetName() + " is made by " + ref.Kind + " " + ref.Name + ": check " + check +
					" dispatches Jobs, JobSets, and the pods and pod groups that no controller makes"
			}
		}
		return ""
	},
	workloadName: func(obj client.Object) string {
		if group := obj.GetLabels()[berthv1alpha1.PodGroupNameLabel]; group != "" {
			return pod.GroupWorkloadName(obj.GetNamespace(), group)
		}
		return jobframework.WorkloadName(corev1.SchemeGroupVersion.WithKind("Pod"), obj.GetName(), string(obj.GetUID()))
	},
	// A held pod deleted here: its copy is deleted there.
	watched: predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc: func(e event.DeleteEvent) bool {
			p, ok := e.Object.(*corev1.Pod)
			return ok && gated(p) && metav1.GetControllerOf(p) == nil
		},
	},
	held:     func(obj client.Object) bool { return gated(obj.(*corev1.Pod)) },
	mirrored: func(wl *berthv1alpha1.Workload, _ client.Object) bool { return workload.IsAdmitted(wl) },
	spec: func(obj, copyObj client.Object) {
		p, c := obj.(*corev1.Pod), copyObj.(*corev1.Pod)
		p.Spec.DeepCopyInto(&c.Spec)
		// The worker's admission plugins set these from its own
		// PriorityClasses and ServiceAccounts.
		c.Spec.Priority, c.Spec.PreemptionPolicy = nil, nil
		tokens := map[string]bool{}
		c.Spec.Volumes = slices.DeleteFunc(c.Spec.Volumes, func(v corev1.Volume) bool {
			tokens[v.Name] = strings.HasPrefix(v.Name, serviceAccountVolume)
			return tokens[v.Name]
		})
		for _, cs := range [][]corev1.Container{c.Spec.InitContainers, c.Spec.Containers} {
			for i := range cs {
				cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return tokens[m.Name] })
			}
		}
		// Held until the worker's Berth admits it, even in a worker whose
		// Berth does not queue pods.
		if !gated(c) {
			c.Spec.SchedulingGates = append(c.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: berthv1alpha1.AdmissionGate})
		}
	},
	mirror: func(obj, copyObj client.Object) bool {
		p, c := obj.(*corev1.Pod), copyObj.(*corev1.Pod)
		want := p.Status.DeepCopy()
		// Not its addresses: they are the worker's network's.
		want.Phase, want.Conditions, want.Message, want.Reason, want.StartTime = c.Status.Phase, c.Status.Conditions, c.Status.Message, c.Status.Reason, c.Status.StartTime
		want.InitContainerStatuses, want.ContainerStatuses = c.Status.InitContainerStatuses, c.Status.ContainerStatuses
		if equality.Semantic.DeepEqual(&p.Status, want) {
			return false
		}
		p.Status = *want
		return true
	},
	clear: func(obj client.Object) bool {
		p := obj.(*corev1.Pod)
		want := p.Status.DeepCopy()
		want.Phase, want.Message, want.Reason, want.StartTime = corev1.PodPending, "", "", nil
		want.InitContainerStatuses, want.ContainerStatuses = nil, nil
		// As the API server has it for a pod created with a gate.
		want.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates"}}
		if c := p.Status.Conditions; len(c) == 1 && c[0].Type == corev1.PodScheduled && c[0].Reason == corev1.PodReasonSchedulingGated {
			// Its time as it is.
			want.Conditions = c
		}
		if equality.Semantic.DeepEqual(&p.Status, want) {
			return false
		}
		p.Status = *want
		return true
	},
}

// serviceAccountVolume begins the name of the volume in which the API
// server's ServiceAccount admission mounts a pod's token: the worker's
// mounts its own.
const serviceAccountVolume = "kube-api-access-"

func gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == berthv1alpha1.AdmissionGate })
}

// named reads a job of one object, by name.
func named(newObject func() client.Object) func(context.Context, client.Reader, *berthv1alpha1.Workload, string) ([]client.Object, error) {
	return func(ctx context.Context, c client.Reader, wl *berthv1alpha1.Workload, name string) ([]client.Object, error) {
		obj := newObject()
		if err := c.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		if !obj.GetDeletionTimestamp().IsZero() {
			return nil, nil
		}
		return []client.Object{obj}, nil
	}
}

// managedByUs refuses a job whose spec.managedBy does not keep its own
// controller away in the manager.
func managedByUs(kind string, managedBy func(client.Object) *string) func([]client.Object, string) string {
	return func(members []client.Object, check string) string {
		by := ptr.Deref(managedBy(members[0]), "")
		if by == berthv1alpha1.MultiClusterControllerName {
			return ""
		}
		return kind + " " + members[0].GetName() + " has spec.managedBy \"" + by +
			"\": a job that check " + check + " dispatches must have spec.managedBy " + berthv1alpha1.MultiClusterControllerName +
			", which can be set only when it is created"
	}
}

// handedOver passes the events of the jobs whose spec.managedBy is
// dispatch's.
func handedOver(managedBy func(client.Object) *string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return ptr.Deref(managedBy(obj), "") == berthv1alpha1.MultiClusterControllerName
	})
}

// mirrorStatus sets a status to another's, and reports whether that
// changed it.
func mirrorStatus[S any](status func(client.Object) *S) func(obj, copy client.Object) bool {
	return func(obj, copyObj client.Object) bool {
		have, want := status(obj), status(copyObj)
		if equality.Semantic.DeepEqual(have, want) {
			return false
		}
		*have = *want
		return true
	}
}

// clearStatus empties a status, and reports whether that changed it.
func clearStatus[S any](status func(client.Object) *S) func(obj client.Object) bool {
	return func(obj client.Object) bool {
		var empty S
		if equality.Semantic.DeepEqual(status(obj), &empty) {
			return false
		}
		*status(obj) = empty
		return true
	}
}

// kindOf is the kind of gvk, nil when dispatch does not handle it.
func kindOf(gvk schema.GroupVersionKind) *kind {
	for i := range kinds {
		if kinds[i].gvk == gvk {
			return &kinds[i]
		}
	}
	return nil
}

// copyFor is the copy of member, of kind k, for a worker: its name,
// namespace, labels and annotations but those Berth writes (the worker's
// Berth writes its own), with the origin label and the manager Workload's
// name and attempt added.
func (k *kind) copyFor(member client.Object, wl *berthv1alpha1.Workload, origin string) client.Object {
	c := k.newObject()
	c.SetName(member.GetName())
	c.SetNamespace(member.GetNamespace())
	labels := maps.Clone(member.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	for _, l := range berthv1alpha1.OwnedLabels {
		delete(labels, l)
	}
	labels[berthv1alpha1.MultiClusterOriginLabel] = origin
	c.SetLabels(labels)
	annotations := maps.Clone(member.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, a := range berthv1alpha1.OwnedAnnotations {
		delete(annotations, a)
	}
	annotations[berthv1alpha1.MultiClusterWorkloadAnnotation] = wl.Name
	annotations[berthv1alpha1.MultiClusterAttemptAnnotation] = attempt(wl)
	c.SetAnnotations(annotations)
	k.spec(member, c)
	return c
}

// ownerOf is the kind of the job that owns the manager's Workload wl,
// when dispatch handles it, and the name its owner reference gives: the
// job's controller reference, or, for a pod group, whose Workload every
// pod owns, the group's name.
func ownerOf(wl metav1.Object) (*kind, string) {
	if ref := metav1.GetControllerOf(wl); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return nil, ""
		}
		return kindOf(gv.WithKind(ref.Kind)), ref.Name
	}
	group := wl.GetLabels()[berthv1alpha1.PodGroupNameLabel]
	refs := wl.GetOwnerReferences()
	if group == "" || len(refs) == 0 || slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.APIVersion != "v1" || r.Kind != "Pod" }) {
		// A group that a StatefulSet or a LeaderWorkerSet makes is not
		// dispatched.
		return nil, ""
	}
	return kindOf(corev1.SchemeGroupVersion.WithKind("Pod")), group
}
