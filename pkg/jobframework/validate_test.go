package jobframework

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestValidator(t *testing.T) {
	const controller = "system:serviceaccount:berth-system:berth-controller"
	job := func() *utiltesting.JobWrapper {
		w := utiltesting.MakeJob("j", "ns").Queue("main").Parallelism(2).Request("nvidia.com/gpu", "1")
		w.UID = "uid-1"
		return w
	}
	suspended := func(w *utiltesting.JobWrapper) *utiltesting.JobWrapper {
		w.Spec.Suspend = ptr.To(true)
		return w
	}
	holding := func(j *batchv1.Job) *berthv1alpha1.Workload {
		podSets, _ := (&fakeJob{*j}).PodSets()
		wl := newWorkload(j, fakeIntegration.GVK, podSets, jobPriority{})
		return (&utiltesting.WorkloadWrapper{Workload: *wl}).AdmittedIn("cq", "h100").Obj()
	}
	waiting := func(j *batchv1.Job) *berthv1alpha1.Workload {
		podSets, _ := (&fakeJob{*j}).PodSets()
		return newWorkload(j, fakeIntegration.GVK, podSets, jobPriority{})
	}
	cases := map[string]struct {
		old, new *batchv1.Job
		workload *berthv1alpha1.Workload
		objs     []client.Object
		user     string
		// wantErr are the fields the refusal names; none for an allowed
		// request.
		wantErr []string
	}{
		"a valid new job": {new: suspended(job()).Obj()},
		"a new job Berth cannot count": {
			new:     suspended(job()).Obj(),
			wantErr: []string{"metadata.annotations[test.berth.dev/invalid]"},
		},
		"a new job asking for more than Berth can count": {
			new:     suspended(job()).Request("memory", "8Ei").Obj(),
			wantErr: []string{"spec.containers[resources.requests][memory]", "2 pods of podset main"},
		},
		"removing the queue label of a job that holds quota": {
			old: job().Obj(), new: func() *batchv1.Job { j := job().Obj(); delete(j.Labels, berthv1alpha1.QueueNameLabel); return j }(),
			workload: holding(job().Obj()),
			wantErr:  []string{"metadata.labels[berth.dev/queue-name]", "holds quota in ClusterQueue cq"},
		},
		"moving a job that holds quota": {
			old: job().Obj(), new: job().Queue("other").Obj(), workload: holding(job().Obj()),
			wantErr: []string{"metadata.labels[berth.dev/queue-name]"},
		},
		"moving a waiting job": {
			old: suspended(job()).Obj(), new: suspended(job()).Queue("other").Obj(), workload: waiting(job().Obj()),
		},
		"starting a job that is not admitted": {
			old: suspended(job()).Obj(), new: job().Obj(), workload: waiting(job().Obj()),
			wantErr: []string{"spec.suspend", "is not admitted"},
		},
		"starting a job that has no Workload": {
			old: suspended(job()).Obj(), new: job().Obj(),
			wantErr: []string{"spec.suspend", "no Workload yet"},
		},
		"Berth starts an admitted job with its admission": {
			old: suspended(job()).Obj(), new: job().Parallelism(1).Obj(), workload: holding(job().Obj()), user: controller,
		},
		"more pods for a running job": {
			old: job().Obj(), new: job().Parallelism(4).Obj(), workload: holding(job().Obj()),
			wantErr: []string{"spec: Forbidden: cannot change from 2 to 4 pods while the job holds quota"},
		},
		"more GPUs per pod for a stopped job that holds quota": {
			old: suspended(job()).Obj(), new: suspended(job()).Request("nvidia.com/gpu", "8").Obj(), workload: holding(job().Obj()),
			wantErr: []string{"nvidia.com/gpu per pod 8 instead of 1"},
		},
		"a new job without pods": {
			new:     suspended(job()).Parallelism(0).Obj(),
			wantErr: []string{"podset main has no pods", "kubectl berth stop"},
		},
		"a new job whose RuntimeClass does not exist": {
			new: func() *batchv1.Job {
				j := suspended(job()).Obj()
				j.Spec.Template.Spec.RuntimeClassName = ptr.To("kata")
				return j
			}(),
			wantErr: []string{"spec.runtimeClassName: Not found: \"kata\""},
		},
		"GPUs in limits alone for a stopped job that holds quota": {
			old: suspended(job()).Obj(),
			new: func() *batchv1.Job {
				j := suspended(job()).Obj()
				r := &j.Spec.Template.Spec.Containers[0].Resources
				delete(r.Requests, "nvidia.com/gpu")
				r.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
				return j
			}(),
			workload: holding(job().Obj()),
			wantErr:  []string{"nvidia.com/gpu per pod 8 instead of 1"},
		},
		"a LimitRange's default GPUs for a stopped job that holds quota": {
			old: suspended(job()).Obj(),
			new: func() *batchv1.Job {
				j := suspended(job()).Obj()
				j.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "fetch"}}
				return j
			}(),
			objs: []client.Object{&corev1.LimitRange{
				ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "ns"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
					Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				}}},
			}},
			workload: holding(job().Obj()),
			wantErr:  []string{"nvidia.com/gpu per pod 8 instead of 1"},
		},
		"more GPUs per pod for a waiting job": {
			old: suspended(job()).Obj(), new: suspended(job()).Request("nvidia.com/gpu", "8").Obj(), workload: waiting(job().Obj()),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{berthv1alpha1.AddToScheme, corev1.AddToScheme, nodev1.AddToScheme} {
				if err := add(scheme); err != nil {
					t.Fatal(err)
				}
			}
			objs := tc.objs
			if tc.workload != nil {
				objs = append(objs, tc.workload)
			}
			if strings.Contains(name, "cannot count") {
				tc.new.Annotations = map[string]string{fakeInvalidAnnoKey: "x"}
			}
			v := &validator{
				client:      fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(),
				integration: fakeIntegration,
				opts:        Options{ControllerUsername: controller},
			}
			user := tc.user
			if user == "" {
				user = "alice"
			}
			op := admissionv1.Create
			if tc.old != nil {
				op = admissionv1.Update
			}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: op, UserInfo: authenticationv1.UserInfo{Username: user},
			}})
			var err error
			if tc.old == nil {
				_, err = v.ValidateCreate(ctx, tc.new)
			} else {
				_, err = v.ValidateUpdate(ctx, tc.old, tc.new)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("allowed, want a refusal naming %v", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal %q does not name %q", err, want)
				}
			}
		})
	}
}

// madeForFake is a fakeJob made by another controller for a job Berth
// runs, as a Job's pod is: it names its Workload in Berth's label.
type madeForFake struct{ fakeJob }

func (j *madeForFake) RunsOnWorkload() string { return j.Labels[berthv1alpha1.WorkloadLabel] }

// TestValidatorRefusesWhatIsMadeForAStoppedJob: a Job's controller that
// has not yet seen its Job suspended may make a pod from the spec it last
// saw; while the Workload that pod names is evicted or not admitted, the
// pod is refused, naming Berth's label and why.
func TestValidatorRefusesWhatIsMadeForAStoppedJob(t *testing.T) {
	integration := *fakeIntegration
	integration.Wrap = func(obj client.Object) (GenericJob, error) {
		return &madeForFake{fakeJob{*obj.(*batchv1.Job)}}, nil
	}
	wl := func() *utiltesting.WorkloadWrapper {
		return &utiltesting.WorkloadWrapper{Workload: berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-j"}}}
	}
	cases := map[string]struct {
		// workload is in the cache and, unless live is set, the API server.
		workload, live *berthv1alpha1.Workload
		// wantErr is what the refusal says; empty for an allowed pod.
		wantErr string
	}{
		"admitted": {workload: wl().AdmittedIn("cq", "h100").Obj()},
		"admitted, which this replica's cache has not seen yet": {
			workload: wl().Obj(), live: wl().AdmittedIn("cq", "h100").Obj(),
		},
		"evicted, its quota still held": {
			workload: wl().AdmittedIn("cq", "h100").Condition(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue, berthv1alpha1.ReasonPreempted, 0).Obj(),
			wantErr:  "workload job-j is evicted (Preempted)",
		},
		"requeued":    {workload: wl().Obj(), wantErr: "workload job-j is not admitted"},
		"no Workload": {wantErr: "workload job-j does not exist"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := berthv1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			build := func(wl *berthv1alpha1.Workload) client.Reader {
				b := fake.NewClientBuilder().WithScheme(scheme)
				if wl != nil {
					b = b.WithObjects(wl)
				}
				return b.Build()
			}
			live := tc.live
			if live == nil {
				live = tc.workload
			}
			v := &validator{client: freshReader{cached: build(tc.workload), live: build(live)}, integration: &integration}
			pod := utiltesting.MakeJob("j-x7k2p", "ns").Obj()
			pod.Labels = map[string]string{berthv1alpha1.WorkloadLabel: "job-j", berthv1alpha1.ManagedLabel: "true"}
			_, err := v.ValidateCreate(context.Background(), pod)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) ||
				!strings.Contains(err.Error(), "metadata.labels[berth.dev/workload]")):
				t.Errorf("ValidateCreate() = %v, want a refusal naming metadata.labels[berth.dev/workload] saying %q", err, tc.wantErr)
			}
		})
	}
}
