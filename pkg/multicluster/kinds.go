package multicluster

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// kind is what dispatch needs to know of one kind of job: how to copy it
// to a worker, and how to bring the copy's status back.
type kind struct {
	gvk       schema.GroupVersionKind
	newObject func() client.Object
	newList   func() client.ObjectList
	suspended func(job client.Object) bool
	// managedBy is the job's spec.managedBy: the manager's own controller
	// for the kind must leave a dispatched job alone.
	managedBy func(job client.Object) string
	// spec is the copy's spec: the job's, suspended (the worker's Berth
	// runs it once admitted), for the worker's controller of the kind.
	spec func(job, copy client.Object)
	// mirror sets the job's status to its copy's; it reports whether that
	// changed it.
	mirror func(job, copy client.Object) bool
	// clear empties the status of a job that no worker runs any longer;
	// it reports whether that changed it.
	clear func(job client.Object) bool
}

// kinds are the kinds of job dispatch handles.
var kinds = []kind{
	{
		gvk:       batchv1.SchemeGroupVersion.WithKind("Job"),
		newObject: func() client.Object { return &batchv1.Job{} },
		newList:   func() client.ObjectList { return &batchv1.JobList{} },
		suspended: func(obj client.Object) bool { return ptr.Deref(obj.(*batchv1.Job).Spec.Suspend, false) },
		managedBy: func(obj client.Object) string { return ptr.Deref(obj.(*batchv1.Job).Spec.ManagedBy, "") },
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
		mirror: func(obj, copyObj client.Object) bool {
			job, c := obj.(*batchv1.Job), copyObj.(*batchv1.Job)
			if equality.Semantic.DeepEqual(job.Status, c.Status) {
				return false
			}
			c.Status.DeepCopyInto(&job.Status)
			return true
		},
		clear: func(obj client.Object) bool {
			job := obj.(*batchv1.Job)
			if equality.Semantic.DeepEqual(job.Status, batchv1.JobStatus{}) {
				return false
			}
			job.Status = batchv1.JobStatus{}
			return true
		},
	},
	{
		gvk:       jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet"),
		newObject: func() client.Object { return &jobsetv1alpha2.JobSet{} },
		newList:   func() client.ObjectList { return &jobsetv1alpha2.JobSetList{} },
		suspended: func(obj client.Object) bool { return ptr.Deref(obj.(*jobsetv1alpha2.JobSet).Spec.Suspend, false) },
		managedBy: func(obj client.Object) string { return ptr.Deref(obj.(*jobsetv1alpha2.JobSet).Spec.ManagedBy, "") },
		spec: func(obj, copyObj client.Object) {
			js, c := obj.(*jobsetv1alpha2.JobSet), copyObj.(*jobsetv1alpha2.JobSet)
			js.Spec.DeepCopyInto(&c.Spec)
			c.Spec.ManagedBy, c.Spec.Suspend = nil, ptr.To(true)
		},
		mirror: func(obj, copyObj client.Object) bool {
			js, c := obj.(*jobsetv1alpha2.JobSet), copyObj.(*jobsetv1alpha2.JobSet)
			if equality.Semantic.DeepEqual(js.Status, c.Status) {
				return false
			}
			c.Status.DeepCopyInto(&js.Status)
			return true
		},
		clear: func(obj client.Object) bool {
			js := obj.(*jobsetv1alpha2.JobSet)
			if equality.Semantic.DeepEqual(js.Status, jobsetv1alpha2.JobSetStatus{}) {
				return false
			}
			js.Status = jobsetv1alpha2.JobSetStatus{}
			return true
		},
	},
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

// copyFor is the copy of job, of kind k, for a worker: the job's name,
// namespace, labels and annotations, with the origin label and the
// manager Workload's name and attempt added.
func (k *kind) copyFor(job client.Object, wl *berthv1alpha1.Workload, origin string) client.Object {
	c := k.newObject()
	c.SetName(job.GetName())
	c.SetNamespace(job.GetNamespace())
	labels := maps.Clone(job.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[berthv1alpha1.MultiClusterOriginLabel] = origin
	c.SetLabels(labels)
	annotations := maps.Clone(job.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[berthv1alpha1.MultiClusterWorkloadAnnotation] = wl.Name
	annotations[berthv1alpha1.MultiClusterAttemptAnnotation] = attempt(wl)
	c.SetAnnotations(annotations)
	k.spec(job, c)
	return c
}

// ownerOf is the controlling owner of wl, its job, when dispatch handles
// its kind.
func ownerOf(wl metav1.Object) (*kind, string) {
	ref := metav1.GetControllerOf(wl)
	if ref == nil {
		return nil, ""
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, ""
	}
	return kindOf(gv.WithKind(ref.Kind)), ref.Name
}
