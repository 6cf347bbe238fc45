package pod

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
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
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// The Job controller makes pods for a Job that runs, matching its
	// selector; one suspended makes none.
	queued := utiltesting.MakeJob("queued", "team-a").Queue("main").Obj()
	queued.UID = "u-queued"
	queued.Spec.Suspend = ptr.To(false)
	queued.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u-queued"}}
	waiting := utiltesting.MakeJob("waiting", "team-a").Queue("main").Obj()
	waiting.UID = "u-waiting"
	waiting.Spec.Suspend = ptr.To(true)
	waiting.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u-waiting"}}
	ofJob := func(name, uid string) *corev1.Pod {
		return utiltesting.MakePod("p", "team-a").Label("batch.kubernetes.io/controller-uid", uid).OwnedBy("batch/v1", "Job", name, uid).Obj()
	}
	free := utiltesting.MakeJob("free", "team-a").Obj()
	free.UID = "u-free"
	nsOf := func(name string, l map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		nsOf("team-a", map[string]string{"berth": "on"}), nsOf("team-b", nil), queued, waiting, free).Build()
	opts := jobframework.Options{PodNamespaces: labels.SelectorFromSet(labels.Set{"berth": "on"}), Frameworks: []string{configv1alpha1.FrameworkBatchJob}}
	cases := map[string]struct {
		pod  *corev1.Pod
		opts jobframework.Options
		want bool
	}{
		"in a selected namespace":             {pod: utiltesting.MakePod("p", "team-a").Obj(), opts: opts, want: true},
		"in another namespace":                {pod: utiltesting.MakePod("p", "team-b").Obj(), opts: opts},
		"no selector":                         {pod: utiltesting.MakePod("p", "team-b").Obj(), want: true},
		"of a queued Job":                     {pod: ofJob("queued", "u-queued"), opts: opts},
		"of a queued Job, not its selector's": {pod: utiltesting.MakePod("p", "team-a").OwnedBy("batch/v1", "Job", "queued", "u-queued").Obj(), opts: opts, want: true},
		"of a queued Job that waits":          {pod: ofJob("waiting", "u-waiting"), opts: opts, want: true},
		"naming a Job that is gone":           {pod: utiltesting.MakePod("p", "team-a").OwnedBy("batch/v1", "Job", "j", "u").Obj(), opts: opts, want: true},
		"naming another Job's UID":            {pod: utiltesting.MakePod("p", "team-a").OwnedBy("batch/v1", "Job", "queued", "u-other").Obj(), opts: opts, want: true},
		"of a Job not queued":                 {pod: utiltesting.MakePod("p", "team-a").OwnedBy("batch/v1", "Job", "free", "u-free").Obj(), opts: opts, want: true},
		"of a ReplicaSet":                     {pod: utiltesting.MakePod("p", "team-a").OwnedBy("apps/v1", "ReplicaSet", "rs", "u").Obj(), opts: opts, want: true},
		"in a namespace not cached":           {pod: utiltesting.MakePod("p", "team-c").Obj(), opts: opts},
		"of a queued Job, Jobs not queued": {pod: ofJob("queued", "u-queued"),
			opts: jobframework.Options{PodNamespaces: opts.PodNamespaces}, want: true},
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

// TestRunsOnWorkload: a pod with Berth's labels and not the queue's, one
// a Job's controller made from the template Berth ran the Job with, names
// the Workload whose admission it needs; a queued pod is held by its gate.
func TestRunsOnWorkload(t *testing.T) {
	cases := map[string]struct {
		labels map[string]string
		want   string
	}{
		"a Job's pod":            {labels: map[string]string{berthv1alpha1.ManagedLabel: "true", berthv1alpha1.WorkloadLabel: "job-j"}, want: "job-j"},
		"a queued pod, admitted": {labels: map[string]string{berthv1alpha1.QueueNameLabel: "q", berthv1alpha1.ManagedLabel: "true", berthv1alpha1.WorkloadLabel: "pod-p"}},
		"not Berth's":            {labels: map[string]string{berthv1alpha1.WorkloadLabel: "job-j"}},
	}
	for name, tc := range cases {
		p := (*Pod)(utiltesting.MakePod("p", "ns").Obj())
		p.Labels = tc.labels
		if got := p.RunsOnWorkload(); got != tc.want {
			t.Errorf("%s: RunsOnWorkload() = %q, want %q", name, got, tc.want)
		}
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

// TestValidateOnUpdate checks what a pod's owner may not change once Berth
// holds or admitted the pod.
func TestValidateOnUpdate(t *testing.T) {
	admitted := func() *utiltesting.PodWrapper {
		return utiltesting.MakePod("p", "ns").Queue("main").Request("nvidia.com/gpu", "1").
			Label(berthv1alpha1.ManagedLabel, "true").Label(berthv1alpha1.WorkloadLabel, "wl")
	}
	cases := map[string]struct {
		old, new *corev1.Pod
		want     string
	}{
		"removing Berth's gate": {
			old: utiltesting.MakePod("p", "ns").Queue("main").Gated().Obj(), new: utiltesting.MakePod("p", "ns").Queue("main").Obj(),
			want: "spec.schedulingGates",
		},
		"more GPUs for an admitted pod": {
			old: admitted().Obj(), new: admitted().Request("nvidia.com/gpu", "8").Obj(),
			want: "nvidia.com/gpu per pod cannot grow from 1 to 8",
		},
		"GPUs in limits for an admitted pod": {
			old: admitted().Obj(),
			new: func() *corev1.Pod {
				p := admitted().Obj()
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), "cpu": resource.MustParse("4")}
				delete(p.Spec.Containers[0].Resources.Requests, "nvidia.com/gpu")
				return p
			}(),
			want: "nvidia.com/gpu per pod cannot grow from 1 to 2",
		},
		"fewer GPUs for an admitted pod":    {old: admitted().Request("nvidia.com/gpu", "2").Obj(), new: admitted().Obj()},
		"a label of the user's own":         {old: admitted().Obj(), new: admitted().Label("team", "a").Obj()},
		"more GPUs for a pod Berth left be": {old: utiltesting.MakePod("p", "ns").Obj(), new: utiltesting.MakePod("p", "ns").Request("nvidia.com/gpu", "8").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := (*Pod)(tc.new).ValidateOnUpdate((*Pod)(tc.old))
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("refusal %v does not say %q", errs, tc.want)
			}
		})
	}
}

// TestOwnedKeysChanged checks that no key Berth writes on a pod can be
// removed, changed or added by its owner, each refusal naming the key.
func TestOwnedKeysChanged(t *testing.T) {
	admitted := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels: map[string]string{
				berthv1alpha1.QueueNameLabel: "main", berthv1alpha1.ManagedLabel: "true",
				berthv1alpha1.WorkloadLabel: "wl", berthv1alpha1.PodSetLabel: "main",
			},
			Annotations: map[string]string{berthv1alpha1.PodSetSizeAnnotation: "2", berthv1alpha1.PodGroupRoleAnnotation: "abcd"},
		}}
	}
	cases := map[string]struct {
		change func(*corev1.Pod)
		want   string
	}{
		"removing berth.dev/managed": {func(p *corev1.Pod) { delete(p.Labels, berthv1alpha1.ManagedLabel) }, "metadata.labels[berth.dev/managed]"},
		"another workload":           {func(p *corev1.Pod) { p.Labels[berthv1alpha1.WorkloadLabel] = "other" }, "metadata.labels[berth.dev/workload]"},
		"another podset":             {func(p *corev1.Pod) { p.Labels[berthv1alpha1.PodSetLabel] = "workers" }, "metadata.labels[berth.dev/podset]"},
		"another gang size":          {func(p *corev1.Pod) { p.Annotations[berthv1alpha1.PodSetSizeAnnotation] = "1" }, "metadata.annotations[berth.dev/podset-size]"},
		"another topology assignment": {func(p *corev1.Pod) {
			p.Annotations[berthv1alpha1.PodSetTopologyAssignmentAnnotation] = `{"levels":["rack"],"domains":[]}`
		}, "metadata.annotations[berth.dev/podset-topology-assignment]"},
		"another role in its group":           {func(p *corev1.Pod) { p.Annotations[berthv1alpha1.PodGroupRoleAnnotation] = "ef01" }, "metadata.annotations[berth.dev/pod-group-role]"},
		"a label of the owner's":              {func(p *corev1.Pod) { p.Labels["team"] = "a" }, ""},
		"the queue label (checked elsewhere)": {func(p *corev1.Pod) { p.Labels[berthv1alpha1.QueueNameLabel] = "other" }, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := admitted()
			tc.change(p)
			errs := ownedKeysChanged(admitted(), p)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Errorf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.want {
				t.Errorf("refusals %v, want one naming %s", errs, tc.want)
			}
		})
	}
	if errs := ownedKeysChanged(&corev1.Pod{}, admitted()); len(errs) != 5 {
		t.Errorf("adding Berth's keys to a pod: %d refusals, want 5: %v", len(errs), errs)
	}
}

// TestChangedPassesWhatTheReconcilerReads: a pod's updates reach the job
// reconciler when they change its metadata, its spec (but its node), its
// phase or its readiness, and not when they bind it or add to its status
// alone.
func TestChangedPassesWhatTheReconcilerReads(t *testing.T) {
	base := utiltesting.MakePod("p", "ns").Queue("main").Request(corev1.ResourceCPU, "1").Obj()
	(*Pod)(base).Suspend()
	utiltesting.CheckUpdates(t, changed, base, map[string]utiltesting.UpdateCase[*corev1.Pod]{
		"bound to a node": {Change: func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }},
		"scheduled": {Change: func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		}},
		"its containers started": {Change: func(p *corev1.Pod) {
			p.Status.PodIP = "10.0.0.1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Started: ptr.To(true)}}
		}},
		"running": {Change: func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, Want: true},
		"ready": {Change: func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, Want: true},
		"failed":           {Change: func(p *corev1.Pod) { p.Status.Message = "evicted" }, Want: true},
		"its gate removed": {Change: func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, Want: true},
		"labelled":         {Change: func(p *corev1.Pod) { p.Labels["team"] = "a" }, Want: true},
		"annotated":        {Change: func(p *corev1.Pod) { p.Annotations = map[string]string{"note": "x"} }, Want: true},
		"being deleted":    {Change: func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }, Want: true},
		"owned":            {Change: func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j"}} }, Want: true},
		"resized": {Change: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}, Want: true},
	})
}
