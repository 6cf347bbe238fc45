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
