package scheduler

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// fakeApplier records decisions. It does not touch the cache or queues:
// the env does, like the controllers would.
type fakeApplier struct {
	admitted  map[string]*berthv1alpha1.Admission
	preempted map[string]string
	// preemptMsg is the message of each preemption.
	preemptMsg map[string]string
	pending    map[string]string
	// failAdmit and failPreempt make Admit and Preempt of the keyed
	// workload return the error.
	failAdmit   map[string]error
	failPreempt map[string]error
	// onPending, if set, runs when a workload is left pending.
	onPending func(key string)
}

var _ Applier = (*fakeApplier)(nil)

// errWrite is a failed write that is not a race with another writer.
var errWrite = errors.New("write failed")

func newFakeApplier() *fakeApplier {
	return &fakeApplier{admitted: map[string]*berthv1alpha1.Admission{}, preempted: map[string]string{}, pending: map[string]string{}, failAdmit: map[string]error{}}
}

func (f *fakeApplier) Admit(_ context.Context, wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	if err := f.failAdmit[workload.Key(wl)]; err != nil {
		return nil, err
	}
	f.admitted[workload.Key(wl)] = adm
	delete(f.pending, workload.Key(wl))
	return wl, nil
}

func (f *fakeApplier) Preempt(_ context.Context, wl *berthv1alpha1.Workload, reason, msg string) error {
	if err := f.failPreempt[workload.Key(wl)]; err != nil {
		return err
	}
	f.preempted[workload.Key(wl)] = reason
	if f.preemptMsg == nil {
		f.preemptMsg = map[string]string{}
	}
	f.preemptMsg[workload.Key(wl)] = msg
	return nil
}

func (f *fakeApplier) SetPending(wl *berthv1alpha1.Workload, reason, msg string) {
	f.pending[workload.Key(wl)] = reason + ": " + msg
	if f.onPending != nil {
		f.onPending(workload.Key(wl))
	}
}

// env wires a cache, a queue manager and a scheduler; pending workloads
// are queued in the ClusterQueue named by their spec.queueName.
type env struct {
	cache   *cache.Cache
	queues  *queue.Manager
	applier *fakeApplier
	sched   *Scheduler
}

type envInputs struct {
	flavors  []*berthv1alpha1.ResourceFlavor
	queues   []*berthv1alpha1.ClusterQueue
	cohorts  []*berthv1alpha1.Cohort
	admitted []*berthv1alpha1.Workload
	pending  []*berthv1alpha1.Workload
}

func newEnv(in envInputs) *env {
	e := &env{cache: cache.New(), queues: queue.NewManager(), applier: newFakeApplier()}
	e.sched = New(e.cache, e.queues, e.applier, WithClock(func() time.Time { return utiltesting.BaseTime }))
	for _, f := range in.flavors {
		e.cache.AddOrUpdateResourceFlavor(f)
	}
	for _, c := range in.cohorts {
		e.cache.AddOrUpdateCohort(c)
		e.queues.AddOrUpdateCohort(c)
	}
	for _, q := range in.queues {
		e.cache.AddOrUpdateClusterQueue(q)
		e.queues.AddOrUpdateClusterQueue(q)
	}
	for _, w := range in.admitted {
		e.cache.AddOrUpdateWorkload(w)
	}
	for _, w := range in.pending {
		if err := e.queues.AddOrUpdateWorkload(w, berthv1alpha1.ClusterQueueReference(w.Spec.QueueName)); err != nil {
			panic(err)
		}
	}
	return e
}

// flavorsOf summarises an admission as "cq: podset=count resource:flavor ...".
func flavorsOf(adm *berthv1alpha1.Admission) string {
	parts := []string{string(adm.ClusterQueue) + ":"}
	for _, psa := range adm.PodSetAssignments {
		var rs []string
		for r, f := range psa.Flavors {
			rs = append(rs, string(r)+":"+string(f))
		}
		sort.Strings(rs)
		parts = append(parts, psa.Name+"="+itoa(*psa.Count), strings.Join(rs, ","))
	}
	return strings.Join(parts, " ")
}

func itoa(n int32) string {
	return strconv.Itoa(int(n))
}

func gpuFlavors() []*berthv1alpha1.ResourceFlavor {
	return []*berthv1alpha1.ResourceFlavor{
		utiltesting.MakeResourceFlavor("h100"),
		utiltesting.MakeResourceFlavor("a100"),
		utiltesting.MakeResourceFlavor("tainted", corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}),
	}
}
