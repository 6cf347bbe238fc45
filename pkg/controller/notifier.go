package controller

import (
	"context"
	"sync"
	"time"

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

// clusterQueuesChanged asks for the status of every ClusterQueue that
// match accepts, all of them when match is nil, to be written.
func (n *StatusNotifier) clusterQueuesChanged(ctx context.Context, c client.Reader, match func(*berthv1alpha1.ClusterQueue) bool) error {
	cqs := &berthv1alpha1.ClusterQueueList{}
	if err := c.List(ctx, cqs); err != nil {
		return err
	}
	for i := range cqs.Items {
		if match == nil || match(&cqs.Items[i]) {
			n.ClusterQueueChanged(berthv1alpha1.ClusterQueueReference(cqs.Items[i].Name))
		}
	}
	return nil
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
