package core

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// statusDelay is how long a queue's status waits after a change before it
// is written: every workload event of a busy queue changes its counts, and
// one write a second per queue is plenty for people and costs the API
// server little.
const statusDelay = time.Second

// statusInterval is the least time between two writes of one queue's
// status while only its counts and usage change. A busy queue's counts
// change with every admission; written each second, the statuses of a few
// dozen queues cost the API server as much as the admissions themselves.
const statusInterval = 5 * time.Second

// statusWritesPerSecond bounds such writes for all queues together, so
// that their cost does not grow with the number of queues: with a
// thousand busy queues, each one's counts are refreshed every 100 s or
// so rather than 200 writes a second taken from admissions.
const statusWritesPerSecond = 20

// statusPacer spaces the status writes of each queue by statusInterval,
// within a budget that all queues share.
type statusPacer struct {
	mu     sync.Mutex
	budget *rate.Limiter
	last   map[string]time.Time
	// booked is when a queue that found the budget spent may write: its
	// turn is reserved, so that waiting queues do not all retry at once.
	booked map[string]time.Time
}

// newStatusBudget is the budget the pacers of one controller share.
func newStatusBudget() *rate.Limiter {
	return rate.NewLimiter(statusWritesPerSecond, statusWritesPerSecond)
}

func newStatusPacer(budget *rate.Limiter) *statusPacer {
	return &statusPacer{budget: budget, last: map[string]time.Time{}, booked: map[string]time.Time{}}
}

// wait says how long a write of key's status must wait. Zero means it may
// be written now, and the write is then counted as done.
func (p *statusPacer) wait(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if at, ok := p.booked[key]; ok {
		if left := at.Sub(now); left > 0 {
			return left
		}
		delete(p.booked, key)
	} else {
		if left := statusInterval - now.Sub(p.last[key]); left > 0 {
			return left
		}
		if d := p.budget.ReserveN(now, 1).DelayFrom(now); d > 0 {
			p.booked[key] = now.Add(d)
			return d
		}
	}
	p.last[key] = now
	return 0
}

// due says how long until key may write its status, like wait but without
// booking a turn: zero when it may write now.
func (p *statusPacer) due(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if at, ok := p.booked[key]; ok {
		return max(0, at.Sub(now))
	}
	return max(0, statusInterval-now.Sub(p.last[key]))
}

// wrote counts a write of key's status made out of turn, as a change of
// Active is.
func (p *statusPacer) wrote(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = time.Now()
	delete(p.booked, key)
}

// forget drops what is known of a queue that is gone.
func (p *statusPacer) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.booked, key)
}

// sameActive reports whether two condition lists agree on Active: a change
// of it is written at once, not paced.
func sameActive(a, b []metav1.Condition) bool {
	ca, cb := meta.FindStatusCondition(a, berthv1alpha1.ConditionActive), meta.FindStatusCondition(b, berthv1alpha1.ConditionActive)
	if ca == nil || cb == nil {
		return ca == cb
	}
	return ca.Status == cb.Status && ca.Reason == cb.Reason && ca.Message == cb.Message && ca.ObservedGeneration == cb.ObservedGeneration
}

// StatusNotifier tells the ClusterQueue and LocalQueue reconcilers that a
// queue's status may have changed, and tells the Workload reconciler that
// workloads must be looked at again (their queue appeared or changed).
//
// A queue is told once until its reconcile starts: every event of every
// workload in it would otherwise send the same request, a hundred
// thousand of them on the perf baseline, each an object allocated, passed
// through a channel and handed to the work queue only to be merged there.
type StatusNotifier struct {
	clusterQueues chan event.GenericEvent
	localQueues   chan event.GenericEvent
	workloads     chan event.GenericEvent

	toldCQs told[berthv1alpha1.ClusterQueueReference]
	toldLQs told[types.NamespacedName]
}

// told is the set of queues told of a change whose reconcile has not
// started since.
type told[K comparable] struct {
	mu   sync.Mutex
	keys map[K]struct{}
}

// add records key and reports whether it was not there yet: whether the
// queue must be told.
func (t *told[K]) add(key K) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.keys[key]; ok {
		return false
	}
	if t.keys == nil {
		t.keys = map[K]struct{}{}
	}
	t.keys[key] = struct{}{}
	return true
}

// remove notes that key's reconcile starts: a change from now on must be
// told again.
func (t *told[K]) remove(key K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.keys, key)
}

// NewStatusNotifier returns a notifier with room for bursts of events.
func NewStatusNotifier() *StatusNotifier {
	return &StatusNotifier{
		clusterQueues: make(chan event.GenericEvent, 1024),
		localQueues:   make(chan event.GenericEvent, 1024),
		workloads:     make(chan event.GenericEvent, 1024),
	}
}

// WorkloadChanged notes that the counts of wl's queues may have changed.
func (n *StatusNotifier) WorkloadChanged(wl *berthv1alpha1.Workload) {
	if wl.Spec.QueueName != "" {
		n.LocalQueueChanged(types.NamespacedName{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)})
	}
	if adm := wl.Status.Admission; adm != nil {
		n.ClusterQueueChanged(adm.ClusterQueue)
	}
}

// ClusterQueueChanged asks for the status of a ClusterQueue to be written.
func (n *StatusNotifier) ClusterQueueChanged(name berthv1alpha1.ClusterQueueReference) {
	if n.toldCQs.add(name) {
		n.clusterQueues <- event.GenericEvent{Object: &berthv1alpha1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: string(name)}}}
	}
}

// LocalQueueChanged asks for the status of a LocalQueue to be written.
func (n *StatusNotifier) LocalQueueChanged(key types.NamespacedName) {
	if n.toldLQs.add(key) {
		n.localQueues <- event.GenericEvent{Object: &berthv1alpha1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	}
}

// RequeueWorkload asks for a Workload to be reconciled again.
func (n *StatusNotifier) RequeueWorkload(key types.NamespacedName) {
	n.workloads <- event.GenericEvent{Object: &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

// delayed is a source that adds the events of ch to the queue after delay,
// so that a burst of events for one object becomes one reconcile.
func delayed(ch <-chan event.GenericEvent, delay time.Duration) source.Source {
	return source.Channel(ch, handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}, delay)
		},
	})
}
