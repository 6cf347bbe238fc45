package testing

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// JobWrapper builds a batch/v1 Job.
type JobWrapper struct{ batchv1.Job }

// MakeJob starts a Job of one pod with one container and no requests. It
// is not suspended: the webhook suspends jobs that Berth manages.
func MakeJob(name, ns string) *JobWrapper {
	return &JobWrapper{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](1),
			Completions: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}},
			}},
		},
	}}
}

// Obj returns the built Job.
func (j *JobWrapper) Obj() *batchv1.Job { return &j.Job }

// Queue sets the queue label.
func (j *JobWrapper) Queue(q string) *JobWrapper { return j.Label(berthv1alpha1.QueueNameLabel, q) }

// PriorityClass sets the priority class label.
func (j *JobWrapper) PriorityClass(p string) *JobWrapper {
	return j.Label(berthv1alpha1.PriorityClassLabel, p)
}

// Label sets a label.
func (j *JobWrapper) Label(k, v string) *JobWrapper {
	if j.Labels == nil {
		j.Labels = map[string]string{}
	}
	j.Labels[k] = v
	return j
}

// Parallelism sets parallelism and completions.
func (j *JobWrapper) Parallelism(n int32) *JobWrapper {
	j.Spec.Parallelism, j.Spec.Completions = ptr.To(n), ptr.To(n)
	return j
}

// MinParallelism allows partial admission down to n pods.
func (j *JobWrapper) MinParallelism(n int32) *JobWrapper {
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	j.Annotations[berthv1alpha1.JobMinParallelismAnnotation] = strconv.Itoa(int(n))
	return j
}

// Request sets a per-pod request of the container.
func (j *JobWrapper) Request(name corev1.ResourceName, q string) *JobWrapper {
	j.Spec.Template.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	return j
}

// MakeLocalQueue builds a LocalQueue of a ClusterQueue.
func MakeLocalQueue(name, ns, cq string) *berthv1alpha1.LocalQueue {
	return &berthv1alpha1.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       berthv1alpha1.LocalQueueSpec{ClusterQueue: berthv1alpha1.ClusterQueueReference(cq)},
	}
}

// MakeWorkloadPriorityClass builds a WorkloadPriorityClass.
func MakeWorkloadPriorityClass(name string, value int32) *berthv1alpha1.WorkloadPriorityClass {
	return &berthv1alpha1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}
