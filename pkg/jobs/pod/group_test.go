package pod

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func member(name, total, cpu string) *utiltesting.PodWrapper {
	return utiltesting.MakePod(name, "ns").Queue("q").Group("g", total).Request(corev1.ResourceCPU, cpu).Gated()
}

func TestGroupIsQueuedOnceWhole(t *testing.T) {
	cases := map[string]struct {
		pods        []*corev1.Pod
		wantWhole   bool
		wantInvalid string
		wantWhy     string
	}{
		"two of three": {
			pods:    []*corev1.Pod{member("a", "3", "1").Obj(), member("b", "3", "1").Obj()},
			wantWhy: "2 of its 3 pods exist",
		},
		"all three": {
			pods:      []*corev1.Pod{member("a", "3", "1").Obj(), member("b", "3", "1").Obj(), member("c", "3", "1").Obj()},
			wantWhole: true,
		},
		"a failed pod does not count": {
			pods: []*corev1.Pod{member("a", "2", "1").Obj(), func() *corev1.Pod {
				p := member("b", "2", "1").Obj()
				p.Status.Phase = corev1.PodFailed
				return p
			}()},
			wantWhy: "1 of its 2 pods exist",
		},
		"the pods disagree on the count": {
			pods:        []*corev1.Pod{member("a", "2", "1").Obj(), member("b", "3", "1").Obj()},
			wantInvalid: "disagree on their annotation berth.dev/pod-group-total-count: 2, 3",
		},
		"the pods disagree on the queue": {
			pods:        []*corev1.Pod{member("a", "2", "1").Obj(), member("b", "2", "1").Queue("other").Obj()},
			wantInvalid: "disagree on their label berth.dev/queue-name: other, q",
		},
		"more pods than the count": {
			pods:        []*corev1.Pod{member("a", "1", "1").Obj(), member("b", "1", "1").Obj()},
			wantInvalid: "it has 2 pods, its size is 1",
		},
		"no count and no StatefulSet": {
			pods:        []*corev1.Pod{utiltesting.MakePod("a", "ns").Queue("q").Label(berthv1alpha1.PodGroupNameLabel, "g").Obj()},
			wantInvalid: "no annotation berth.dev/pod-group-total-count",
		},
		"a StatefulSet's group is queued with its first pod": {
			pods: []*corev1.Pod{utiltesting.MakePod("s-0", "ns").Queue("q").Label(berthv1alpha1.PodGroupNameLabel, "g").
				OwnedBy("apps/v1", "StatefulSet", "s", "uid-s").Obj()},
			wantWhole: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGroup("ns", "g", tc.pods)
			if g.owner != nil {
				g.total = 3
			}
			whole, why, invalid := g.Complete()
			if whole != tc.wantWhole || invalid != (tc.wantInvalid != "") {
				t.Fatalf("Complete() = %v, %q, invalid %v", whole, why, invalid)
			}
			if want := tc.wantInvalid + tc.wantWhy; !strings.Contains(why, want) {
				t.Errorf("why = %q, want it to say %q", why, want)
			}
		})
	}
}

func TestGroupPodSetsAreItsRoles(t *testing.T) {
	g := newGroup("ns", "g", []*corev1.Pod{
		member("worker-1", "3", "2").Obj(), member("leader", "3", "1").Obj(), member("worker-2", "3", "2").Obj(),
	})
	ps, err := g.PodSets()
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]string{}
	for _, p := range ps {
		got[p.Count] = p.Template.Spec.Containers[0].Resources.Requests.Cpu().String()
		if !strings.HasPrefix(p.Name, "role-") {
			t.Errorf("podset %s, want a role's name", p.Name)
		}
		if len(p.Template.Spec.SchedulingGates) != 0 {
			t.Errorf("podset %s keeps the gate", p.Name)
		}
	}
	if diff := cmp.Diff(map[int32]string{1: "1", 2: "2"}, got); diff != "" {
		t.Errorf("podsets, pods to cpu per pod (-want +got):\n%s", diff)
	}

	one := newGroup("ns", "g", []*corev1.Pod{member("a", "4", "1").Obj()})
	one.total = 4
	ps, err = one.PodSets()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Name != "main" || ps[0].Count != 4 {
		t.Errorf("a group of one role: %v, want podset main of 4 pods", ps)
	}
	if name := g.WorkloadName(); !strings.HasPrefix(name, "pod-group-g-") {
		t.Errorf("WorkloadName() = %q", name)
	}
}

func TestGroupRunsNoMoreThanAdmitted(t *testing.T) {
	running := member("a", "2", "1").Obj()
	running.Spec.SchedulingGates = nil
	extra := member("c", "2", "1").Obj()
	g := newGroup("ns", "g", []*corev1.Pod{running, member("b", "2", "1").Obj(), extra})
	if !g.Runs() || !g.IsSuspended() {
		t.Fatalf("Runs() %v, IsSuspended() %v: want a group that runs in part", g.Runs(), g.IsSuspended())
	}
	// The podset's template is another pod's, a leader's say: only
	// Berth's labels are handed on.
	info := jobframework.PodSetInfo{Name: "main", Count: 2, NodeSelector: map[string]string{"pool": "h100"},
		Labels: map[string]string{"example.com/leader": "true", berthv1alpha1.WorkloadLabel: "wl"}}
	if err := g.RunWithPodSetsInfo([]jobframework.PodSetInfo{info}); err != nil {
		t.Fatal(err)
	}
	if len(g.changed) != 1 || g.changed[0].Name != "b" {
		t.Fatalf("let through %d pods, want b only", len(g.changed))
	}
	if gated(g.changed[0]) || g.changed[0].Spec.NodeSelector["pool"] != "h100" {
		t.Errorf("pod b: gates %v, node selector %v", g.changed[0].Spec.SchedulingGates, g.changed[0].Spec.NodeSelector)
	}
	if l := g.changed[0].Labels; l[berthv1alpha1.WorkloadLabel] != "wl" || l["example.com/leader"] != "" {
		t.Errorf("pod b's labels %v: want the Workload's, and no other pod's", l)
	}
	if !gated(extra) {
		t.Error("pod c, beyond the admitted count, was let through")
	}
}

func TestGroupFinishes(t *testing.T) {
	phases := func(ps ...corev1.PodPhase) []*corev1.Pod {
		var out []*corev1.Pod
		for i, p := range ps {
			pod := member(string(rune('a'+i)), "2", "1").Obj()
			pod.Status.Phase = p
			out = append(out, pod)
		}
		return out
	}
	cases := map[string]struct {
		pods                []*corev1.Pod
		finished, succeeded bool
	}{
		"one runs":                  {pods: phases(corev1.PodSucceeded, corev1.PodRunning)},
		"both succeeded":            {pods: phases(corev1.PodSucceeded, corev1.PodSucceeded), finished: true, succeeded: true},
		"one failed, one succeeded": {pods: phases(corev1.PodFailed, corev1.PodSucceeded), finished: true},
		"a failed pod was replaced and succeeded": {pods: phases(corev1.PodFailed, corev1.PodSucceeded, corev1.PodSucceeded), finished: true, succeeded: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			finished, succeeded, msg := newGroup("ns", "g", tc.pods).Finished()
			if finished != tc.finished || succeeded != tc.succeeded {
				t.Errorf("Finished() = %v, %v, %q", finished, succeeded, msg)
			}
		})
	}
	sts := utiltesting.MakePod("s-0", "ns").Queue("q").Label(berthv1alpha1.PodGroupNameLabel, "g").OwnedBy("apps/v1", "StatefulSet", "s", "u").Obj()
	sts.Status.Phase = corev1.PodSucceeded
	if finished, _, _ := newGroup("ns", "g", []*corev1.Pod{sts}).Finished(); finished {
		t.Error("a StatefulSet's group finished with its pods")
	}
}

func TestGroupPodValidation(t *testing.T) {
	if errs := (*Pod)(utiltesting.MakePod("a", "ns").Queue("q").Group("g", "zero").Obj()).ValidateOnCreate(); len(errs) != 1 ||
		errs[0].Field != "metadata.annotations[berth.dev/pod-group-total-count]" {
		t.Errorf("a count that is not a number: %v", errs)
	}
	if errs := (*Pod)(utiltesting.MakePod("a", "ns").Queue("q").Label(berthv1alpha1.PodGroupNameLabel, "g").Obj()).ValidateOnCreate(); len(errs) != 1 {
		t.Errorf("no count: %v", errs)
	}
	old := member("a", "2", "1").Label(berthv1alpha1.ManagedLabel, "true").Obj()
	moved := old.DeepCopy()
	moved.Labels[berthv1alpha1.PodGroupNameLabel] = "other"
	moved.Annotations[berthv1alpha1.PodGroupTotalCountAnnotation] = "1"
	errs := (*Pod)(moved).ValidateOnUpdate((*Pod)(old))
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	want := []string{"metadata.labels[berth.dev/pod-group-name]", "metadata.annotations[berth.dev/pod-group-total-count]"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("refused fields (-want +got):\n%s", diff)
	}
}

func TestStatefulSetGroupBelongsToItsStatefulSet(t *testing.T) {
	p := utiltesting.MakePod("s-0", "ns").Queue("q").Label(berthv1alpha1.PodGroupNameLabel, "s").OwnedBy("apps/v1", "StatefulSet", "s", "uid-1").Obj()
	g := newGroup("ns", "s", []*corev1.Pod{p})
	want := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "s", UID: "uid-1"}}
	if diff := cmp.Diff(want, g.Owners()); diff != "" {
		t.Errorf("owners (-want +got):\n%s", diff)
	}
	other := newGroup("ns", "s", []*corev1.Pod{utiltesting.MakePod("s-0", "ns").Queue("q").Label(berthv1alpha1.PodGroupNameLabel, "s").
		OwnedBy("apps/v1", "StatefulSet", "s", "uid-2").Obj()})
	if g.WorkloadName() == other.WorkloadName() {
		t.Error("a StatefulSet created again under its name gets the old one's Workload")
	}
}
