package jobframework

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// fakeJob is the smallest GenericJob: a batch/v1 Job read only through
// the interface, one podset whose count is the parallelism, finished when
// its label says so, its pods ready when its annotation says so.
type fakeJob struct{ batchv1.Job }

const (
	fakeFinishedLabel    = "test.berth.dev/finished"
	fakePodsReadyAnnoKey = "test.berth.dev/pods-ready"
	fakeInvalidAnnoKey   = "test.berth.dev/invalid"
)

var fakeIntegration = &Integration{
	Name:   "test/fake",
	GVK:    batchv1.SchemeGroupVersion.WithKind("Job"),
	NewJob: func() GenericJob { return &fakeJob{} },
	Wrap: func(obj client.Object) (GenericJob, error) {
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return nil, errors.New("not a Job")
		}
		return &fakeJob{*j}, nil
	},
	AddToScheme: batchv1.AddToScheme,
	Parts:       []schema.GroupKind{{Kind: "Pod"}},
}

func (j *fakeJob) Object() client.Object { return &j.Job }
func (j *fakeJob) IsSuspended() bool     { return ptr.Deref(j.Spec.Suspend, false) }
func (j *fakeJob) Suspend()              { j.Spec.Suspend = ptr.To(true) }

func (j *fakeJob) RunWithPodSetsInfo(infos []PodSetInfo) error {
	j.Spec.Suspend = ptr.To(false)
	j.Spec.Parallelism = ptr.To(infos[0].Count)
	ApplyToTemplate(&j.Spec.Template, infos[0])
	return nil
}

func (j *fakeJob) RestorePodSetsInfo(infos []PodSetInfo) bool {
	changed := ptr.Deref(j.Spec.Parallelism, 1) != infos[0].Count
	j.Spec.Parallelism = ptr.To(infos[0].Count)
	return ApplyToTemplate(&j.Spec.Template, infos[0]) || changed
}

func (j *fakeJob) Finished() (bool, bool, string) {
	v, ok := j.Labels[fakeFinishedLabel]
	return ok, v == "succeeded", "the fake job " + v
}

func (j *fakeJob) PodSets() ([]berthv1alpha1.PodSet, error) {
	if v, ok := j.Annotations[fakeInvalidAnnoKey]; ok {
		return nil, field.Invalid(field.NewPath("metadata", "annotations").Key(fakeInvalidAnnoKey), v, "the fake job says no")
	}
	return []berthv1alpha1.PodSet{{Name: "main", Count: ptr.Deref(j.Spec.Parallelism, 1), Template: *j.Spec.Template.DeepCopy()}}, nil
}

func (j *fakeJob) PodsReady() bool { return j.Annotations[fakePodsReadyAnnoKey] == "true" }

// jobState is what a reconcile is judged by on the job.
type jobState struct {
	Exists       bool
	Suspended    bool
	Parallelism  int32
	NodeSelector map[string]string
	Workload     string
}

// workloadState is what it is judged by on the job's Workload.
type workloadState struct {
	Exists     bool
	Queue      string
	Priority   *int32
	Admitted   bool
	Conditions map[string]string
}

func TestJobReconciler(t *testing.T) {
	const queued = "main"
	job := func() *utiltesting.JobWrapper {
		return utiltesting.MakeJob("j", "ns").Queue(queued).Parallelism(2).Request("nvidia.com/gpu", "1")
	}
	suspended := func(w *utiltesting.JobWrapper) *utiltesting.JobWrapper {
		w.Spec.Suspend = ptr.To(true)
		return w
	}
	// workloadOf is the Workload the reconciler would create for j.
	workloadOf := func(j *batchv1.Job) *utiltesting.WorkloadWrapper {
		podSets, err := (&fakeJob{*j}).PodSets()
		if err != nil {
			t.Fatal(err)
		}
		return &utiltesting.WorkloadWrapper{Workload: *newWorkload(j, fakeIntegration.GVK, podSets, jobPriority{})}
	}
	admitted := func(w *utiltesting.WorkloadWrapper) *utiltesting.WorkloadWrapper {
		return w.AdmittedIn("cq", "h100")
	}
	evicted := func(w *utiltesting.WorkloadWrapper) *utiltesting.WorkloadWrapper {
		return w.Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 0)
	}
	h100 := map[string]string{"gpu.berth.dev/family": "h100"}
	condsAdmitted := map[string]string{berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True"}

	cases := map[string]struct {
		job      *batchv1.Job
		workload func(*batchv1.Job) *berthv1alpha1.Workload
		objs     []client.Object
		// heldAtCreation makes the fake job one that can be held only when
		// it is created, as a pod.
		heldAtCreation bool
		wantJob        jobState
		wantWorkload   workloadState
	}{
		"a job held only at creation that runs without a Workload is not Berth's": {
			job:            job().Obj(),
			heldAtCreation: true,
			wantJob:        jobState{Exists: true, Parallelism: 2},
		},
		"an evicted job held only at creation is deleted, and its Workload keeps the quota": {
			job:            job().Obj(),
			workload:       func(j *batchv1.Job) *berthv1alpha1.Workload { return evicted(admitted(workloadOf(j))).Obj() },
			heldAtCreation: true,
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadEvicted: "True",
			}},
		},
		"a job held only at creation, admitted, runs": {
			job:            suspended(job()).Obj(),
			workload:       func(j *batchv1.Job) *berthv1alpha1.Workload { return admitted(workloadOf(j)).Obj() },
			heldAtCreation: true,
			wantJob:        jobState{Exists: true, Parallelism: 2, NodeSelector: h100, Workload: "job-j-"},
			wantWorkload:   workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: condsAdmitted},
		},
		"a new suspended job gets its Workload": {
			job:          suspended(job().PriorityClass("high")).Obj(),
			objs:         []client.Object{utiltesting.MakeWorkloadPriorityClass("high", 100)},
			wantJob:      jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Priority: ptr.To[int32](100), Conditions: map[string]string{}},
		},
		"a new running job is suspended before its Workload is made": {
			job:     job().Obj(),
			wantJob: jobState{Exists: true, Suspended: true, Parallelism: 2},
		},
		"a job without the queue label is left alone": {
			job:     utiltesting.MakeJob("j", "ns").Obj(),
			wantJob: jobState{Exists: true, Parallelism: 1},
		},
		"an admitted job runs with its flavor's node labels": {
			job:          suspended(job()).Obj(),
			workload:     func(j *batchv1.Job) *berthv1alpha1.Workload { return admitted(workloadOf(j)).Obj() },
			wantJob:      jobState{Exists: true, Parallelism: 2, NodeSelector: h100, Workload: "job-j-"},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: condsAdmitted},
		},
		"a running admitted job reports its pods ready": {
			job: func() *batchv1.Job {
				j := job().Obj()
				j.Annotations = map[string]string{fakePodsReadyAnnoKey: "true"}
				return j
			}(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return admitted(workloadOf(j)).Obj() },
			wantJob:  jobState{Exists: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadPodsReady: "True",
			}},
		},
		"a running job whose Workload is not admitted is stopped": {
			job:          job().Obj(),
			workload:     func(j *batchv1.Job) *berthv1alpha1.Workload { return workloadOf(j).Obj() },
			wantJob:      jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Conditions: map[string]string{}},
		},
		"an evicted running job is stopped and keeps its quota": {
			job:      job().Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return evicted(admitted(workloadOf(j))).Obj() },
			wantJob:  jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadEvicted: "True",
			}},
		},
		"a stopped evicted job gets its template back first": {
			job: func() *batchv1.Job {
				j := suspended(job()).Obj()
				j.Spec.Template.Spec.NodeSelector = h100
				return j
			}(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload {
				orig := j.DeepCopy()
				orig.Spec.Template.Spec.NodeSelector = nil
				return evicted(admitted(workloadOf(orig))).Obj()
			},
			wantJob: jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadEvicted: "True",
			}},
		},
		"a stopped and restored evicted job is requeued": {
			job:      suspended(job()).Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return evicted(admitted(workloadOf(j))).Obj() },
			wantJob:  jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "False", berthv1alpha1.WorkloadAdmitted: "False",
				berthv1alpha1.WorkloadEvicted: "True", berthv1alpha1.WorkloadRequeued: "True",
			}},
		},
		"a stopped evicted job whose pod sets changed gets a new Workload, not its old one requeued": {
			job: suspended(job()).Request("nvidia.com/gpu", "8").Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload {
				return evicted(admitted(workloadOf(job().Obj()))).Obj()
			},
			wantJob: jobState{Exists: true, Suspended: true, Parallelism: 2},
		},
		"an evicted job's quota waits for its pods to end": {
			job:      suspended(job()).Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return evicted(admitted(workloadOf(j))).Obj() },
			objs: []client.Object{&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{
					berthv1alpha1.WorkloadLabel: WorkloadName(fakeIntegration.GVK, "j", "uid-1"),
				}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			}},
			wantJob: jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadEvicted: "True",
			}},
		},
		"a stopped job admitted for other pod sets gives its quota back": {
			job: suspended(job()).Request("nvidia.com/gpu", "8").Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload {
				return admitted(workloadOf(job().Obj())).Obj()
			},
			wantJob: jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadEvicted: "True",
			}},
		},
		"a running job beyond its admission is evicted": {
			job:      job().Parallelism(4).Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return admitted(workloadOf(job().Obj())).Obj() },
			wantJob:  jobState{Exists: true, Parallelism: 4},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadEvicted: "True",
			}},
		},
		"a waiting job whose requests changed gets a new Workload": {
			job:      suspended(job()).Request("nvidia.com/gpu", "8").Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return workloadOf(job().Obj()).Obj() },
			wantJob:  jobState{Exists: true, Suspended: true, Parallelism: 2},
		},
		"a waiting job whose queue label was removed leaves Berth": {
			job: func() *batchv1.Job {
				j := suspended(job()).Obj()
				delete(j.Labels, berthv1alpha1.QueueNameLabel)
				return j
			}(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return workloadOf(j).Queue(queued).Obj() },
			wantJob:  jobState{Exists: true, Suspended: true, Parallelism: 2},
		},
		"a job that holds quota and lost its label still finishes its Workload": {
			job: func() *batchv1.Job {
				j := job().Label(fakeFinishedLabel, "succeeded").Obj()
				delete(j.Labels, berthv1alpha1.QueueNameLabel)
				return j
			}(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return admitted(workloadOf(j).Queue(queued)).Obj() },
			wantJob:  jobState{Exists: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadFinished: "True",
			}},
		},
		"a finished job finishes its Workload": {
			job:      job().Label(fakeFinishedLabel, "succeeded").Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return admitted(workloadOf(j)).Obj() },
			wantJob:  jobState{Exists: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: map[string]string{
				berthv1alpha1.WorkloadQuotaReserved: "True", berthv1alpha1.WorkloadAdmitted: "True", berthv1alpha1.WorkloadFinished: "True",
			}},
		},
		"a finished job's quota waits for its pods to end": {
			job:      job().Label(fakeFinishedLabel, "failed").Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload { return admitted(workloadOf(j)).Obj() },
			objs: []client.Object{&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{
					berthv1alpha1.WorkloadLabel: WorkloadName(fakeIntegration.GVK, "j", "uid-1"),
				}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			}},
			wantJob:      jobState{Exists: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Admitted: true, Conditions: condsAdmitted},
		},
		"a new queue label moves a waiting Workload": {
			job: suspended(job()).Queue("other").Obj(),
			workload: func(j *batchv1.Job) *berthv1alpha1.Workload {
				return workloadOf(j).Queue(queued).Obj()
			},
			wantJob:      jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: "other", Conditions: map[string]string{}},
		},
		"a new priority label re-prioritises a waiting Workload": {
			job:          suspended(job()).PriorityClass("high").Obj(),
			workload:     func(j *batchv1.Job) *berthv1alpha1.Workload { return workloadOf(job().Obj()).Obj() },
			objs:         []client.Object{utiltesting.MakeWorkloadPriorityClass("high", 100)},
			wantJob:      jobState{Exists: true, Suspended: true, Parallelism: 2},
			wantWorkload: workloadState{Exists: true, Queue: queued, Priority: ptr.To[int32](100), Conditions: map[string]string{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{berthv1alpha1.AddToScheme, batchv1.AddToScheme, corev1.AddToScheme} {
				if err := add(scheme); err != nil {
					t.Fatal(err)
				}
			}
			tc.job.UID = "uid-1"
			flavor := utiltesting.MakeResourceFlavor("h100")
			flavor.Spec.NodeLabels = h100
			objs := append([]client.Object{tc.job, flavor}, tc.objs...)
			if tc.workload != nil {
				wl := tc.workload(tc.job)
				wl.Name = WorkloadName(fakeIntegration.GVK, tc.job.Name, string(tc.job.UID))
				wl.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(tc.job, fakeIntegration.GVK)}
				objs = append(objs, wl)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&berthv1alpha1.Workload{}).Build()
			integration := fakeIntegration
			if tc.heldAtCreation {
				held := *fakeIntegration
				held.HoldOnlyAtCreation = true
				integration = &held
			}
			r := &JobReconciler{client: c, reader: c, writer: workloadwriter.NewUpdate(c), recorder: events.NewFakeRecorder(10), integration: integration}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.job)}); err != nil {
				t.Fatal(err)
			}
			gotJob, gotWorkload := readStates(ctx, t, c, tc.job)
			if diff := cmp.Diff(tc.wantJob, gotJob); diff != "" {
				t.Errorf("the job (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWorkload, gotWorkload); diff != "" {
				t.Errorf("its Workload (-want +got):\n%s", diff)
			}
		})
	}
}

func readStates(ctx context.Context, t *testing.T, c client.Client, orig *batchv1.Job) (jobState, workloadState) {
	t.Helper()
	var js jobState
	j := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(orig), j); err == nil {
		js = jobState{
			Exists: true, Suspended: ptr.Deref(j.Spec.Suspend, false), Parallelism: ptr.Deref(j.Spec.Parallelism, 1),
			NodeSelector: j.Spec.Template.Spec.NodeSelector,
		}
		if name := j.Spec.Template.Labels[berthv1alpha1.WorkloadLabel]; name != "" {
			js.Workload = name[:len("job-j-")]
		}
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	var ws workloadState
	wl := &berthv1alpha1.Workload{}
	key := types.NamespacedName{Namespace: orig.Namespace, Name: WorkloadName(fakeIntegration.GVK, orig.Name, string(orig.UID))}
	if err := c.Get(ctx, key, wl); err == nil {
		ws = workloadState{Exists: true, Queue: string(wl.Spec.QueueName), Priority: wl.Spec.Priority,
			Admitted: wl.Status.Admission != nil, Conditions: map[string]string{}}
		for _, cond := range wl.Status.Conditions {
			ws.Conditions[cond.Type] = string(cond.Status)
		}
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return js, ws
}

// TestAdmittedInfos: an admitted podset runs with its admitted count, its
// flavors' node labels and tolerations added to its own, and the labels
// and annotation that tie its pods to the Workload.
func TestAdmittedInfos(t *testing.T) {
	gpuTaint := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	own := corev1.Toleration{Key: "team", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}
	h100 := utiltesting.MakeResourceFlavor("h100")
	h100.Spec.NodeLabels = map[string]string{"gpu.berth.dev/family": "h100"}
	h100.Spec.Tolerations = []corev1.Toleration{gpuTaint, own}
	cpu := utiltesting.MakeResourceFlavor("cpu")
	cpu.Spec.NodeLabels = map[string]string{"node.berth.dev/pool": "cpu"}
	racks := corev1.NodeSelectorRequirement{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r0", "r1"}}
	// twoRacks admits 3 pods of podset main, 2 in rack r0 and 1 in r1.
	twoRacks := func() *berthv1alpha1.Admission {
		adm := utiltesting.MakeAdmission("cq").Assign("main", 3,
			map[corev1.ResourceName]string{"nvidia.com/gpu": "cpu"}, nil).Obj()
		adm.PodSetAssignments[0].TopologyAssignment = &berthv1alpha1.TopologyAssignment{
			Levels: []string{"block", "rack"},
			Domains: []berthv1alpha1.TopologyDomainAssignment{
				{Values: []string{"b0", "r0"}, Count: 2}, {Values: []string{"b0", "r1"}, Count: 1},
			},
		}
		return adm
	}
	twoRacksAnnotations := map[string]string{
		berthv1alpha1.PodSetSizeAnnotation: "3",
		berthv1alpha1.PodSetTopologyAssignmentAnnotation: `{"levels":["block","rack"],"domains":[` +
			`{"values":["b0","r0"],"count":2},{"values":["b0","r1"],"count":1}]}`,
	}

	cases := map[string]struct {
		podSet    *berthv1alpha1.PodSet
		admission *berthv1alpha1.Admission
		want      PodSetInfo
		wantErr   bool
	}{
		"one flavor, full count": {
			podSet: utiltesting.MakePodSet("main", 4).Request("nvidia.com/gpu", "1").Toleration(own).NodeSelector("zone", "a").Obj(),
			admission: utiltesting.MakeAdmission("cq").Assign("main", 4,
				map[corev1.ResourceName]string{"nvidia.com/gpu": "h100"}, nil).Obj(),
			want: PodSetInfo{
				Name: "main", Count: 4,
				NodeSelector: map[string]string{"zone": "a", "gpu.berth.dev/family": "h100"},
				Tolerations:  []corev1.Toleration{own, gpuTaint},
				Labels:       map[string]string{berthv1alpha1.WorkloadLabel: "wl", berthv1alpha1.PodSetLabel: "main", berthv1alpha1.ManagedLabel: "true"},
				Annotations:  map[string]string{berthv1alpha1.PodSetSizeAnnotation: "4"},
			},
		},
		"partial admission, two flavors": {
			podSet: utiltesting.MakePodSet("main", 4).Request("nvidia.com/gpu", "1", "cpu", "1").MinCount(2).Obj(),
			admission: utiltesting.MakeAdmission("cq").Assign("main", 2,
				map[corev1.ResourceName]string{"nvidia.com/gpu": "h100", "cpu": "cpu"}, nil).Obj(),
			want: PodSetInfo{
				Name: "main", Count: 2,
				NodeSelector: map[string]string{"gpu.berth.dev/family": "h100", "node.berth.dev/pool": "cpu"},
				Tolerations:  []corev1.Toleration{gpuTaint, own},
				Labels:       map[string]string{berthv1alpha1.WorkloadLabel: "wl", berthv1alpha1.PodSetLabel: "main", berthv1alpha1.ManagedLabel: "true"},
				Annotations:  map[string]string{berthv1alpha1.PodSetSizeAnnotation: "2"},
			},
		},
		"placed on a topology over two racks of one block": {
			podSet:    utiltesting.MakePodSet("main", 3).Request("nvidia.com/gpu", "8").Obj(),
			admission: twoRacks(),
			want: PodSetInfo{
				Name: "main", Count: 3,
				NodeSelector:     map[string]string{"node.berth.dev/pool": "cpu", "block": "b0"},
				NodeRequirements: []corev1.NodeSelectorRequirement{racks},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{racks}}},
					},
				}},
				Labels:      map[string]string{berthv1alpha1.WorkloadLabel: "wl", berthv1alpha1.PodSetLabel: "main", berthv1alpha1.ManagedLabel: "true"},
				Annotations: twoRacksAnnotations,
			},
		},
		"an elastic podset is kept only in the block, where it grows": {
			podSet: func() *berthv1alpha1.PodSet {
				ps := utiltesting.MakePodSet("main", 3).Request("nvidia.com/gpu", "8").Obj()
				ps.Template.Labels = map[string]string{berthv1alpha1.ElasticLabel: "true"}
				return ps
			}(),
			admission: twoRacks(),
			want: PodSetInfo{
				Name: "main", Count: 3,
				NodeSelector: map[string]string{"node.berth.dev/pool": "cpu", "block": "b0"},
				Labels:       map[string]string{berthv1alpha1.ElasticLabel: "true", berthv1alpha1.WorkloadLabel: "wl", berthv1alpha1.PodSetLabel: "main", berthv1alpha1.ManagedLabel: "true"},
				Annotations:  twoRacksAnnotations,
			},
		},
		"an admission without the podset": {
			podSet:    utiltesting.MakePodSet("main", 1).Obj(),
			admission: utiltesting.MakeAdmission("cq").Assign("other", 1, nil, nil).Obj(),
			wantErr:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := berthv1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(h100, cpu).Build()
			wl := utiltesting.MakeWorkload("wl", "ns").PodSets(*tc.podSet).Admitted(tc.admission).Obj()
			before := wl.DeepCopy()
			infos, err := admittedInfos(context.Background(), c, wl)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff([]PodSetInfo{tc.want}, infos); diff != "" {
				t.Errorf("infos (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, wl); diff != "" {
				t.Errorf("the Workload changed (-before +after):\n%s", diff)
			}
			if !workload.IsAdmitted(wl) {
				t.Error("the test Workload is not admitted")
			}
		})
	}
}

// TestBeyondAdmissionOfAWorkloadNotAdmitted: a group none of whose pods
// runs or waits (all ended, or deleted with their namespace) is neither
// running nor suspended; its Workload, admitted or not, is compared with
// an admission only when it has one.
func TestBeyondAdmissionOfAWorkloadNotAdmitted(t *testing.T) {
	j := utiltesting.MakeJob("j", "ns").Parallelism(2).Request("nvidia.com/gpu", "1").Obj()
	podSets, err := (&fakeJob{*j}).PodSets()
	if err != nil {
		t.Fatal(err)
	}
	wl := newWorkload(j, fakeIntegration.GVK, podSets, jobPriority{})
	if got := beyondAdmission(wl, podSets); got != "" {
		t.Errorf("beyondAdmission of a Workload without an admission = %q, want nothing", got)
	}
}

// TestPodsLeftAsksTheAPIServerWhenTheCacheHasNone: a pod the job's
// controller made just before the job was stopped may not be in the cache
// yet; the evicted job's quota stays held while the API server has it.
func TestPodsLeftAsksTheAPIServerWhenTheCacheHasNone(t *testing.T) {
	wl := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-a"}}
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{berthv1alpha1.WorkloadLabel: "job-a"}},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	cases := map[string]struct {
		cached, live []client.Object
		noLive       bool
		want         int
	}{
		"the cache has not seen the pod":   {live: []client.Object{pod("a-1", corev1.PodPending)}, want: 1},
		"the cache has it":                 {cached: []client.Object{pod("a-1", corev1.PodRunning)}, want: 1},
		"ended everywhere":                 {cached: []client.Object{pod("a-1", corev1.PodSucceeded)}, live: []client.Object{pod("a-1", corev1.PodSucceeded)}, want: 0},
		"none anywhere":                    {want: 0},
		"no API server reader (the tests)": {noLive: true, live: []client.Object{pod("a-1", corev1.PodRunning)}, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &JobReconciler{client: fake.NewClientBuilder().WithObjects(tc.cached...).Build()}
			if !tc.noLive {
				r.live = fake.NewClientBuilder().WithObjects(tc.live...).Build()
			}
			got, err := r.podsLeft(context.Background(), wl)
			if err != nil || got != tc.want {
				t.Errorf("podsLeft() = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
