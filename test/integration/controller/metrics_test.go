package controller

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// series finds the value of the metric family name whose labels include
// every pair of want; for a histogram, its count.
func series(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				switch {
				case m.GetCounter() != nil:
					return m.GetCounter().GetValue(), true
				case m.GetGauge() != nil:
					return m.GetGauge().GetValue(), true
				case m.GetHistogram() != nil:
					return float64(m.GetHistogram().GetSampleCount()), true
				}
			}
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// TestMetricsAndEventsOfTheContract plays admission, borrowing, reclaim
// by preemption and an eviction by a drained queue, then reads every
// metric of the contract from the manager's registry, and the events the
// API server stored.
func TestMetricsAndEventsOfTheContract(t *testing.T) {
	cohort := unique("cohort")
	inCohort := func(cq *utiltesting.ClusterQueueWrapper) {
		cq.Cohort(cohort).Preemption(berthv1alpha1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny})
		cq.Labels = map[string]string{teamLabel: "vision"}
	}
	nsA, cqA := queueSetup(t, "2", inCohort)
	flavor := queueFlavor(t, cqA)
	nsB := namespace(t, nil)
	cqB := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).Resource("cpu", "2").Obj())
	inCohort(cqB)
	lqB := utiltesting.MakeLocalQueue("main", nsB, cqB.Name)
	lqB.Labels = map[string]string{teamLabel: "speech"}
	mustCreate(t, cqB.Obj(), lqB)

	borrower := utiltesting.MakeWorkload("borrower", nsA).Queue("main").Request(1, "cpu", "4").Obj()
	mustCreate(t, borrower)
	waitForWorkload(t, borrower, "the borrower admitted", admitted)
	owner := utiltesting.MakeWorkload("owner", nsB).Queue("main").Request(1, "cpu", "2").Obj()
	mustCreate(t, owner)
	waitForWorkload(t, borrower, "the borrower preempted to reclaim", conditionIs(berthv1alpha1.WorkloadPreempted, "True", berthv1alpha1.ReasonInCohortReclamation))
	waitForWorkload(t, owner, "the owner admitted", admitted)

	drained := &berthv1alpha1.ClusterQueue{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKey{Name: cqB.Name}, drained); err != nil {
		t.Fatal(err)
	}
	patched := drained.DeepCopy()
	patched.Spec.StopPolicy = berthv1alpha1.HoldAndDrain
	if err := server.Client.Patch(ctxFor(t), patched, client.MergeFrom(drained)); err != nil {
		t.Fatal(err)
	}
	waitForWorkload(t, owner, "the owner evicted by the drained queue", conditionIs(berthv1alpha1.WorkloadEvicted, "True", berthv1alpha1.ReasonClusterQueueStopped))

	for _, m := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"berth_admitted_workloads_total", map[string]string{"cluster_queue": cqA}, 1},
		{"berth_admitted_workloads_total", map[string]string{"cluster_queue": cqB.Name}, 1},
		{"berth_preempted_workloads_total", map[string]string{"cluster_queue": cqA, "reason": berthv1alpha1.ReasonInCohortReclamation}, 1},
		{"berth_evicted_workloads_total", map[string]string{"cluster_queue": cqB.Name, "reason": berthv1alpha1.ReasonClusterQueueStopped}, 1},
		{"berth_admission_wait_time_seconds", map[string]string{"cluster_queue": cqA}, 1},
		{"berth_admission_cycle_duration_seconds", nil, 1},
		{"berth_cluster_queue_nominal_quota", map[string]string{"cluster_queue": cqA, "flavor": flavor, "resource": "cpu", "team": "vision"}, 2},
		// The cohort's two queues lend it 2 cpu each; the owner holds 2.
		{"berth_cohort_subtree_quota", map[string]string{"cohort": cohort, "flavor": flavor, "resource": "cpu"}, 4},
		{"berth_local_queue_admission_wait_time_seconds", map[string]string{"namespace": nsB, "local_queue": "main", "team": "speech"}, 1},
		{"berth_local_queue_admission_wait_time_seconds", map[string]string{"namespace": nsA, "local_queue": "main", "team": ""}, 1},
	} {
		waitFor(t, fmt.Sprintf("%s%v", m.name, m.labels), func(context.Context) error {
			if v, ok := series(t, m.name, m.labels); !ok || v < m.min {
				return errorf("%v (found %v), want at least %v", v, ok, m.min)
			}
			return nil
		})
	}
	for _, status := range []string{"active", "inadmissible"} {
		if _, ok := series(t, "berth_pending_workloads", map[string]string{"cluster_queue": cqA, "status": status}); !ok {
			t.Errorf("no berth_pending_workloads for %s status %s", cqA, status)
		}
	}
	if _, ok := series(t, "berth_cluster_queue_resource_usage", map[string]string{"cluster_queue": cqA, "flavor": flavor, "resource": "cpu"}); !ok {
		t.Errorf("no berth_cluster_queue_resource_usage for %s", cqA)
	}
	everySeriesServed(t)

	// The events, in the API server.
	waitForEvent(t, nsA, borrower.Name, berthv1alpha1.ReasonPreempted, "Preempted to accommodate workload "+nsB+"/owner")
	waitForEvent(t, nsB, owner.Name, berthv1alpha1.WorkloadEvicted, "Evicted from ClusterQueue "+cqB.Name+" ("+berthv1alpha1.ReasonClusterQueueStopped+")")
	waitForEvent(t, nsB, owner.Name, berthv1alpha1.WorkloadRequeued, "Requeued in LocalQueue main: its quota in ClusterQueue "+cqB.Name+" is released")
}

// teamLabel is the custom label of the suite's metrics (TestMain).
const teamLabel = "team"

// everySeriesServed checks that each metric Berth registers, every one the
// reference page lists, has a series once a scenario has run: none is
// registered and never set.
func everySeriesServed(t *testing.T) {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() {
		ctrlmetrics.Registry.(prometheus.Collector).Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil && strings.HasPrefix(m[1], "berth_") {
			names = append(names, m[1])
		}
	}
	if len(names) < 15 {
		t.Fatalf("%d metrics of Berth's registered: %v", len(names), names)
	}
	for _, name := range names {
		if why, ok := servedOnlyWith[name]; ok {
			t.Logf("%s has a series only with %s", name, why)
			continue
		}
		waitFor(t, "a series of "+name, func(context.Context) error {
			if _, ok := series(t, name, nil); !ok {
				return errorf("none")
			}
			return nil
		})
	}
}

// servedOnlyWith are the metrics that have no series in this test's
// cluster by design, and what gives them one, tested elsewhere.
var servedOnlyWith = map[string]string{
	"berth_topology_stranded_resources": "a flavor with a Topology and a gang waiting for a domain of it (TestStrandedSampler)",
}

// fqName is a metric's name in the text of its prometheus.Desc.
var fqName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

// waitForEvent waits for an event about the object name in namespace ns
// with reason and a note that holds note.
func waitForEvent(t *testing.T, ns, name, reason, note string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the %s event on %s", reason, name), func(ctx context.Context) error {
		events := &eventsv1.EventList{}
		if err := server.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Name == name {
				if e.Reason == reason && strings.Contains(e.Note, note) {
					return nil
				}
				seen = append(seen, e.Reason+": "+e.Note)
			}
		}
		return errorf("the events on %s are %q", name, seen)
	})
}

// eventsOn counts the events of reason on the object name in ns.
func eventsOn(t *testing.T, ns, name, reason string) int {
	t.Helper()
	events := &eventsv1.EventList{}
	if err := server.Client.List(context.Background(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			n++
		}
	}
	return n
}

// waitForWorkload waits until check passes on the stored wl.
func waitForWorkload(t *testing.T, wl *berthv1alpha1.Workload, what string, check func(*berthv1alpha1.Workload) error) {
	t.Helper()
	waitFor(t, what, func(ctx context.Context) error {
		cur := &berthv1alpha1.Workload{}
		if err := server.Client.Get(ctx, client.ObjectKeyFromObject(wl), cur); err != nil {
			return err
		}
		if err := check(cur); err != nil {
			return fmt.Errorf("%w (conditions %v)", err, conditionsOf(cur))
		}
		return nil
	})
}

func conditionsOf(wl *berthv1alpha1.Workload) []string {
	var out []string
	for _, c := range wl.Status.Conditions {
		out = append(out, c.Type+"="+string(c.Status)+"/"+c.Reason)
	}
	if workload.HasQuotaReservation(wl) {
		out = append(out, "reserved in "+string(wl.Status.Admission.ClusterQueue))
	}
	return out
}
