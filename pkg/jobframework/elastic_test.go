package jobframework

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// elasticFake is a fakeJob whose kind may be elastic.
type elasticFake struct{ fakeJob }

func (j *elasticFake) PodTemplates() []*corev1.PodTemplateSpec {
	return []*corev1.PodTemplateSpec{&j.Spec.Template}
}

func TestElasticErrors(t *testing.T) {
	newJob := func(annotation string, gated bool) *elasticFake {
		j := &elasticFake{fakeJob{*utiltesting.MakeJob("j", "ns").Queue("main").Obj()}}
		if annotation != "" {
			j.Annotations = map[string]string{berthv1alpha1.ElasticAnnotation: annotation}
		}
		if gated {
			gateElastic(j)
		}
		return j
	}
	wl := utiltesting.MakeWorkload("wl", "ns").Request(1).Obj()
	cases := map[string]struct {
		old, job GenericJob
		wl       *berthv1alpha1.Workload
		want     string
	}{
		"a new elastic job, gated by the webhook": {job: newJob("true", true)},
		"a job that is not elastic":               {job: newJob("false", false)},
		"another value": {
			job: newJob("yes", false), want: `metadata.annotations[berth.dev/elastic]: Unsupported value: "yes"`,
		},
		"a kind that cannot be elastic": {
			job: &newJob("true", false).fakeJob, want: "only a Job or a RayCluster can be elastic",
		},
		"the gate taken off the template": {
			old: newJob("true", true), job: newJob("true", false), wl: wl,
			want: "spec.spec.schedulingGates: Required value: an elastic job's pods wait for quota with the scheduling gate berth.dev/elastic",
		},
		"made elastic once it has a Workload": {
			old: newJob("", false), job: newJob("true", true), wl: wl,
			want: "metadata.annotations[berth.dev/elastic]: Forbidden: is read when the job is created and cannot change while it has Workload wl",
		},
		"made elastic while it has no Workload yet": {old: newJob("", false), job: newJob("true", true)},
		"no longer elastic once it has a Workload": {
			old: newJob("true", true), job: newJob("false", true), wl: wl,
			want: "metadata.annotations[berth.dev/elastic]: Forbidden",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := elasticErrors(tc.old, tc.job, tc.wl, []string{"main"})
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want an error holding %q", got, tc.want)
			}
		})
	}
}

func TestTallyPods(t *testing.T) {
	pod := func(name string, age time.Duration, phase corev1.PodPhase, gated, ready, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{berthv1alpha1.PodSetLabel: "main"},
			CreationTimestamp: metav1.NewTime(utiltesting.BaseTime.Add(-age))}}
		p.Status.Phase = phase
		if gated {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: berthv1alpha1.ElasticGate}}
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: utiltesting.BaseTime}
		}
		return p
	}
	tally := tallyPods([]corev1.Pod{
		pod("ready", 9*time.Minute, corev1.PodRunning, false, true, false),
		pod("starting", 8*time.Minute, corev1.PodPending, false, false, false),
		pod("terminating", 7*time.Minute, corev1.PodRunning, false, true, true),
		pod("done", 6*time.Minute, corev1.PodSucceeded, false, false, false),
		pod("failed", 5*time.Minute, corev1.PodFailed, false, false, false),
		pod("newer", time.Minute, corev1.PodPending, true, false, false),
		pod("older", 2*time.Minute, corev1.PodPending, true, false, false),
		pod("gated-deleting", 3*time.Minute, corev1.PodPending, true, false, true),
	})["main"]
	var gated []string
	for _, p := range tally.gated {
		gated = append(gated, p.Name)
	}
	got := []any{tally.running, tally.ready, gated}
	// A terminating pod still holds its node; a gated one never held one.
	want := []any{int32(3), int32(3), []string{"older", "newer"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("running, ready, gated (-want +got):\n%s", diff)
	}
}

func TestNewSlice(t *testing.T) {
	wl := utiltesting.MakeWorkload("job-train-1234567890", "ns").Request(2, "nvidia.com/gpu", "8").AdmittedIn("cq", "h100").Obj()
	wl.Labels = map[string]string{berthv1alpha1.JobUIDLabel: "uid"}
	wl.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", UID: "uid"}}, fakeIntegration.GVK)}
	if s := newSlice(wl, wl.Spec.PodSets, map[string]int32{"main": 2}); s != nil {
		t.Errorf("a job that asks for what it was admitted for got a slice: %+v", s.Spec.PodSets)
	}
	grown := []berthv1alpha1.PodSet{*wl.Spec.PodSets[0].DeepCopy()}
	grown[0].Count = 5
	s := newSlice(wl, grown, map[string]int32{"main": 2})
	if s == nil || len(s.Spec.PodSets) != 1 || s.Spec.PodSets[0].Count != 3 {
		t.Fatalf("slice = %+v, want one of 3 pods", s)
	}
	if diff := cmp.Diff(`{"main":{"nvidia.com/gpu":"h100"}}`, s.Annotations[berthv1alpha1.SliceFlavorsAnnotation]); diff != "" {
		t.Errorf("pinned flavors (-want +got):\n%s", diff)
	}
	if len(s.Name) > 63 || s.Labels[berthv1alpha1.SliceOfLabel] != wl.Name || metav1.GetControllerOf(s).Name != "train" {
		t.Errorf("slice %s labels %v owner %v", s.Name, s.Labels, s.OwnerReferences)
	}
	if !sameSlice(s, newSlice(wl, grown, map[string]int32{"main": 2})) {
		t.Error("the same growth makes another slice")
	}
	grown[0].Count = 6
	if sameSlice(s, newSlice(wl, grown, map[string]int32{"main": 2})) {
		t.Error("a slice of 3 pods stands for a growth of 4")
	}
	long := wl.DeepCopy()
	long.Name = strings.Repeat("x", 63)
	if n := sliceName(long); len(n) > 63 {
		t.Errorf("slice name %q is %d characters", n, len(n))
	}
}

func TestElasticPodChanged(t *testing.T) {
	gated := corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: berthv1alpha1.ElasticGate}}}}
	let := corev1.Pod{}
	bound := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}
	running := bound
	running.Status.Phase = corev1.PodRunning
	ready := running
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	done := bound
	done.Status.Phase = corev1.PodSucceeded
	deleting := ready
	deleting.DeletionTimestamp = &metav1.Time{Time: utiltesting.BaseTime}
	cases := map[string]struct {
		before, after corev1.Pod
		want          bool
	}{
		"let run":            {gated, let, true},
		"bound":              {let, bound, false},
		"running, not ready": {bound, running, false},
		"ready":              {running, ready, true},
		"ended":              {running, done, true},
		"being deleted":      {ready, deleting, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := elasticPodChanged.Update(event.UpdateEvent{ObjectOld: &tc.before, ObjectNew: &tc.after}); got != tc.want {
				t.Errorf("passed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNewSliceOnATopology: the slice of a podset placed on a Topology is
// placed where the job's template lets its added pods go, not where the
// Workload's original template would; one that is not keeps the original.
func TestNewSliceOnATopology(t *testing.T) {
	wl := utiltesting.MakeWorkload("job", "ns").Request(2, "nvidia.com/gpu", "8").AdmittedIn("cq", "h100").Obj()
	live := []berthv1alpha1.PodSet{*wl.Spec.PodSets[0].DeepCopy()}
	live[0].Count = 4
	live[0].Template.Spec.NodeSelector = map[string]string{"block": "b0"}
	live[0].Template.Spec.Affinity = NarrowAffinity(nil, []corev1.NodeSelectorRequirement{
		{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r0", "r1"}},
	})
	if s := newSlice(wl, live, map[string]int32{"main": 2}); s.Spec.PodSets[0].Template.Spec.NodeSelector != nil ||
		s.Spec.PodSets[0].Template.Spec.Affinity != nil {
		t.Errorf("a slice off a Topology took the job's template's constraints: %+v", s.Spec.PodSets[0].Template.Spec)
	}
	wl.Status.Admission.PodSetAssignments[0].TopologyAssignment = &berthv1alpha1.TopologyAssignment{
		Levels:  []string{"block", "rack"},
		Domains: []berthv1alpha1.TopologyDomainAssignment{{Values: []string{"b0", "r0"}, Count: 1}, {Values: []string{"b0", "r1"}, Count: 1}},
	}
	s := newSlice(wl, live, map[string]int32{"main": 2})
	spec := s.Spec.PodSets[0].Template.Spec
	if diff := cmp.Diff(live[0].Template.Spec.NodeSelector, spec.NodeSelector); diff != "" {
		t.Errorf("slice's node selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(live[0].Template.Spec.Affinity, spec.Affinity); diff != "" {
		t.Errorf("slice's affinity (-want +got):\n%s", diff)
	}
}
