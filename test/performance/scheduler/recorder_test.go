package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// TestWriteTimeline follows two workloads through a recorder: one
// admitted, evicted and admitted again, one never admitted. The timeline
// lists them in order of creation with the first and the last admission.
func TestWriteTimeline(t *testing.T) {
	s := &Scenario{Workloads: []Planned{
		{Namespace: "q1", Name: "small-0", Class: "small", Cohort: "c0", Priority: 50, RequestMilli: 1000, Runtime: time.Hour, Offset: 100 * time.Millisecond},
		{Namespace: "q0", Name: "large-0", Class: "large", Cohort: "c0", Priority: 200, RequestMilli: 20000, Runtime: time.Hour},
	}}
	// No client: the runtimes are an hour, so nothing is finished.
	r := NewRecorder(context.Background(), nil, s)
	start := time.Now()
	r.Start(start)
	r.Created(&s.Workloads[1], start)
	r.Created(&s.Workloads[0], start.Add(100*time.Millisecond))
	large := &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "q0", Name: "large-0"}}
	set := func(typ string, status metav1.ConditionStatus) {
		meta.SetStatusCondition(&large.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "Test"})
	}
	large.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "q0"}
	set(berthv1alpha1.WorkloadAdmitted, metav1.ConditionTrue)
	r.observe(large.DeepCopy())
	first := r.records[key(large)].admittedAt
	set(berthv1alpha1.WorkloadEvicted, metav1.ConditionTrue)
	r.observe(large.DeepCopy())
	time.Sleep(2 * time.Millisecond)
	set(berthv1alpha1.WorkloadEvicted, metav1.ConditionFalse)
	r.observe(large.DeepCopy())
	last := r.records[key(large)].admittedAt
	if last <= first {
		t.Fatalf("the second admission (%v) is not after the first (%v)", last, first)
	}
	r.records[key(large)].timer.Stop()
	if got, want := r.Counts(), (Counts{Created: 2, Admitted: 1, Running: 1, Evictions: 1}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}

	var out strings.Builder
	if err := r.WriteTimeline(&out); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"namespace,name,class,cohort,priority,requestMilli,runtimeMs,createdMs,firstAdmittedMs,admittedMs,finishedMs,evictions",
		"q0,large-0,large,c0,200,20000,3600000,0," + ms(first) + "," + ms(last) + ",,1",
		"q1,small-0,small,c0,50,1000,3600000,100,,,,0",
		"",
	}, "\n")
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}

func key(wl *berthv1alpha1.Workload) types.NamespacedName {
	return types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}
}

func ms(d time.Duration) string { return millis(d, true) }
