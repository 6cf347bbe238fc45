package pod

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	_ "github.com/berth-dev/berth/pkg/jobs/job"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestGate(t *testing.T) {
	p := (*Pod)(utiltesting.MakePod("p", "ns").Obj())
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "other.example/gate"}}
	if p.IsSuspended() {
		t.Fatal("a pod with another gate is held by Berth")
	}
	p.Suspend()
	p.Suspend()
	want := []corev1.PodSchedulingGate{{Name: "other.example/gate"}, {Name: berthv1alpha1.AdmissionGate}}
	if diff := cmp.Diff(want, p.Spec.SchedulingGates); diff != "" {
		t.Errorf("gates after Suspend twice (-want +got):\n%s", diff)
	}
	ps, err := p.PodSets()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]corev1.PodSchedulingGate{{Name: "other.example/gate"}}, ps[0].Template.Spec.SchedulingGates); diff != "" {
		t.Errorf("the podset's gates (-want +got):\n%s", diff)
	}
	if ps[0].Count != 1 || ps[0].Name != "main" {
		t.Errorf("podset %s of %d pods, want main of 1", ps[0].Name, ps[0].Count)
	}
}

func TestRunAddsTheAdmissionAndRemovesNothing(t *testing.T) {
	cases := map[string]struct {
		nodeSelector     map[string]string
		info             jobframework.PodSetInfo
		wantNodeSelector map[string]string
		wantTolerations  int
		wantErr          bool
	}{
		"the flavor's labels and tolerations added": {
			nodeSelector: map[string]string{"zone": "a"},
			info: jobframework.PodSetInfo{
				Name: "main", Count: 1,
				NodeSelector: map[string]string{"zone": "a", "gpu": "h100"},
				Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}, {Key: "own", Operator: corev1.TolerationOpExists}},
				Labels:       map[string]string{berthv1alpha1.WorkloadLabel: "wl"},
			},
			wantNodeSelector: map[string]string{"zone": "a", "gpu": "h100"},
			wantTolerations:  2,
		},
		"a node selector the flavor contradicts": {
			nodeSelector: map[string]string{"gpu": "a100"},
			info:         jobframework.PodSetInfo{Name: "main", Count: 1, NodeSelector: map[string]string{"gpu": "h100"}},
			wantErr:      true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := (*Pod)(utiltesting.MakePod("p", "ns").Label("app", "serve").Obj())
			p.Spec.NodeSelector = tc.nodeSelector
			p.Spec.Tolerations = []corev1.Toleration{{Key: "own", Operator: corev1.TolerationOpExists}}
			p.Suspend()
			err := p.RunWithPodSetsInfo([]jobframework.PodSetInfo{tc.info})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if p.IsSuspended() {
				t.Error("the pod still carries the gate")
			}
			if diff := cmp.Diff(tc.wantNodeSelector, p.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if len(p.Spec.Tolerations) != tc.wantTolerations {
				t.Errorf("tolerations %v, want %d", p.Spec.Tolerations, tc.wantTolerations)
			}
			if p.Labels["app"] != "serve" || p.Labels[berthv1alpha1.WorkloadLabel] != "wl" {
				t.Errorf("labels %v, want the pod's and the workload's", p.Labels)
			}
			if p.RestorePodSetsInfo(nil) {
				t.Error("a pod reported that it restored its podset")
			}
		})
	}
}

func TestFinishedAndReady(t *testing.T) {
	cases := map[string]struct {
		status        corev1.PodStatus
		wantFinished  bool
		wantSucceeded bool
		wantReady     bool
	}{
		"pending": {},
		"running, not ready": {status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}},
		"ready": {status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}, wantReady: true},
		"succeeded": {status: corev1.PodStatus{Phase: corev1.PodSucceeded}, wantFinished: true, wantSucceeded: true, wantReady: true},
		"failed":    {status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "OOMKilled"}, wantFinished: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := (*Pod)(utiltesting.MakePod("p", "ns").Obj())
			p.Status = tc.status
			finished, succeeded, _ := p.Finished()
			got := [3]bool{finished, succeeded, p.PodsReady()}
			if diff := cmp.Diff([3]bool{tc.wantFinished, tc.wantSucceeded, tc.wantReady}, got); diff != "" {
				t.Errorf("finished, succeeded, ready (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	nsOf := func(name string, l map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		nsOf("team-a", map[string]string{"berth": "on"}), nsOf("team-b", nil)).Build()
	opts := jobframework.Options{PodNamespaces: labels.SelectorFromSet(labels.Set{"berth": "on"})}
	cases := map[string]struct {
		pod  *corev1.Pod
		opts jobframework.Options
		want bool
	}{
		"in a selected namespace":   {pod: utiltesting.MakePod("p", "team-a").Obj(), opts: opts, want: true},
		"in another namespace":      {pod: utiltesting.MakePod("p", "team-b").Obj(), opts: opts},
		"no selector":               {pod: utiltesting.MakePod("p", "team-b").Obj(), want: true},
		"of a Job":                  {pod: utiltesting.MakePod("p", "team-a").OwnedBy("batch/v1", "Job", "j", "u").Obj(), opts: opts},
		"of a ReplicaSet":           {pod: utiltesting.MakePod("p", "team-a").OwnedBy("apps/v1", "ReplicaSet", "rs", "u").Obj(), opts: opts, want: true},
		"in a namespace not cached": {pod: utiltesting.MakePod("p", "team-c").Obj(), opts: opts},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _ := selects(context.Background(), c, tc.pod, tc.opts)
			if got != tc.want {
				t.Errorf("selects = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateOnCreate(t *testing.T) {
	p := (*Pod)(utiltesting.MakePod("p", "ns").Obj())
	if errs := p.ValidateOnCreate(); len(errs) != 0 {
		t.Errorf("a pod without a node: %v", errs)
	}
	p.Spec.NodeName = "n1"
	if errs := p.ValidateOnCreate(); len(errs) != 1 || errs[0].Field != "spec.nodeName" {
		t.Errorf("a pod with a node: %v, want one error on spec.nodeName", errs)
	}
}
