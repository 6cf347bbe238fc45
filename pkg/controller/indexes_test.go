package controller

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// QueueWorkloads finds a LocalQueue's workloads in the informer's store,
// the stored objects themselves, and follows the store as workloads
// arrive, move to another queue and go.
func TestQueueWorkloadsFollowsTheInformer(t *testing.T) {
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &berthv1alpha1.Workload{}, 0, toolscache.Indexers{})
	q, err := newQueueWorkloads(inf)
	if err != nil {
		t.Fatal(err)
	}
	store := inf.GetIndexer()
	a := utiltesting.MakeWorkload("a", "team-a").Queue("main").Obj()
	for _, wl := range []*berthv1alpha1.Workload{
		a,
		utiltesting.MakeWorkload("b", "team-a").Queue("main").Obj(),
		utiltesting.MakeWorkload("c", "team-a").Queue("other").Obj(),
		utiltesting.MakeWorkload("d", "team-b").Queue("main").Obj(),
		utiltesting.MakeWorkload("e", "team-a").Obj(),
	} {
		if err := store.Add(wl); err != nil {
			t.Fatal(err)
		}
	}
	of := func(ns, name string) []string {
		t.Helper()
		var names []string
		if err := q.Each(ns, name, func(wl *berthv1alpha1.Workload) {
			if stored, _, _ := store.GetByKey(ns + "/" + wl.Name); stored != wl {
				t.Errorf("got a copy of workload %s, want the stored object", wl.Name)
			}
			names = append(names, wl.Name)
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		return names
	}
	if diff := cmp.Diff([]string{"a", "b"}, of("team-a", "main")); diff != "" {
		t.Errorf("team-a/main (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"d"}, of("team-b", "main")); diff != "" {
		t.Errorf("team-b/main (-want +got):\n%s", diff)
	}

	// Get hands out the stored object too, and NotFound for one not there.
	if got, err := q.Get(types.NamespacedName{Namespace: "team-a", Name: "a"}); err != nil || got != a {
		t.Errorf("Get(team-a/a) = %p, %v; want the stored object %p", got, err, a)
	}
	if _, err := q.Get(types.NamespacedName{Namespace: "team-b", Name: "a"}); !apierrors.IsNotFound(err) {
		t.Errorf("Get(team-b/a) = %v, want NotFound", err)
	}

	moved := a.DeepCopy()
	moved.Spec.QueueName = "other"
	if err := store.Update(moved); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(utiltesting.MakeWorkload("b", "team-a").Obj()); err != nil {
		t.Fatal(err)
	}
	if got := of("team-a", "main"); len(got) != 0 {
		t.Errorf("team-a/main holds %v after a moved and b went, want none", got)
	}
	if diff := cmp.Diff([]string{"a", "c"}, of("team-a", "other")); diff != "" {
		t.Errorf("team-a/other (-want +got):\n%s", diff)
	}

	// A workload leaves the index when it finishes, and is not indexed
	// when it arrives finished (a restart).
	finished := moved.DeepCopy()
	workload.SetCondition(finished, berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, "Succeeded", "")
	if err := store.Update(finished); err != nil {
		t.Fatal(err)
	}
	if err := store.Add(utiltesting.MakeWorkload("f", "team-a").Queue("other").
		Condition(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, "Succeeded", 0).Obj()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c"}, of("team-a", "other")); diff != "" {
		t.Errorf("team-a/other after a finished and f arrived finished (-want +got):\n%s", diff)
	}
}
