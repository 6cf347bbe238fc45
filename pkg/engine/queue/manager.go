package queue

import (
	"errors"
	"sort"
	"sync"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// ErrClusterQueueNotFound is returned when adding a workload to a
// ClusterQueue the Manager does not know.
var ErrClusterQueueNotFound = errors.New("ClusterQueue not found")

// Head is a workload popped for a scheduling cycle.
type Head struct {
	Info         *workload.Info
	ClusterQueue berthv1alpha1.ClusterQueueReference
	// activations is the queue's activation count when popped: an event
	// seen after the pop must not be lost by setting the head aside.
	activations int64
	// popped is the entry that was popped; Info may be a newer version.
	popped *workload.Info
	// shape is the popped workload's bucket.
	shape string
}

// RequeueReason says how a head that was not admitted goes back.
type RequeueReason int

const (
	// RequeueInadmissible means the head did not fit. A BestEffortFIFO queue
	// sets it aside until an event; a StrictFIFO queue keeps it at the head.
	RequeueInadmissible RequeueReason = iota
	// RequeueWaiting means the head waits for preempted workloads to release
	// quota; that release is an event, so the scheduler is not woken.
	RequeueWaiting
	// RequeueRetry means something transient failed (a write); retry soon.
	RequeueRetry
)

// Manager holds the pending workloads of every ClusterQueue.
type Manager struct {
	mu      sync.Mutex
	queues  map[berthv1alpha1.ClusterQueueReference]*clusterQueue
	parents map[berthv1alpha1.CohortReference]berthv1alpha1.CohortReference
	// trees holds the queues of each cohort tree by its root, for the
	// events that re-activate a tree: one per finished workload. Built
	// when needed; nil after any change of a queue's cohort or a cohort's
	// parent.
	trees map[berthv1alpha1.CohortReference][]*clusterQueue
	// where maps a workload key to the queue holding it, in any state.
	where  map[string]berthv1alpha1.ClusterQueueReference
	wakeup chan struct{}
	// onBehind receives the workloads set aside without being tried;
	// toTell collects them under mu, to be handed over after it.
	onBehind func([]Behind)
	toTell   []Behind
	// afs is how LocalQueue usage is counted, nil when admission fair
	// sharing is off; locals are the LocalQueues by key.
	afs    *AdmissionFairSharing
	locals map[string]*localQueue
	// ordering places evicted workloads back in their queue.
	ordering workload.Ordering
}

// SetOrdering sets where evicted workloads go back in their queue; call it
// before any workload is added.
func (m *Manager) SetOrdering(o workload.Ordering) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ordering = o
}

// Behind is a workload set aside behind the head of its shape, which did
// not fit: it was not tried itself, and waits for the same reason.
type Behind struct {
	Workload, Head *berthv1alpha1.Workload
	// Strict is set when the head blocks a StrictFIFO queue: Workload
	// waits behind it whatever its shape.
	Strict bool
}

// OnBehind sets f to receive, once per queued workload, the workloads that
// are set aside without being tried, so that they can say why they wait.
// f is called without the Manager's lock and must not block.
func (m *Manager) OnBehind(f func([]Behind)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onBehind = f
}

// unlock releases mu and hands over what was collected to tell.
func (m *Manager) unlock() {
	tell, f := m.toTell, m.onBehind
	m.toTell = nil
	m.mu.Unlock()
	if len(tell) > 0 && f != nil {
		f(tell)
	}
}

// NewManager returns an empty Manager.
func NewManager() *Manager {
	return &Manager{
		queues:  map[berthv1alpha1.ClusterQueueReference]*clusterQueue{},
		parents: map[berthv1alpha1.CohortReference]berthv1alpha1.CohortReference{},
		where:   map[string]berthv1alpha1.ClusterQueueReference{},
		wakeup:  make(chan struct{}, 1),
		locals:  map[string]*localQueue{},
	}
}

// Wakeup is signalled, coalesced, whenever a cycle could decide something
// new. The scheduler waits on it instead of polling.
func (m *Manager) Wakeup() <-chan struct{} {
	return m.wakeup
}

// Wake asks for another scheduling cycle.
func (m *Manager) Wake() { m.wake() }

func (m *Manager) wake() {
	select {
	case m.wakeup <- struct{}{}:
	default:
	}
}

// AddOrUpdateClusterQueue adds a queue or updates its strategy and cohort.
// Its set-aside workloads, and those of its cohort tree, are re-activated:
// a queue change can let them fit.
func (m *Manager) AddOrUpdateClusterQueue(obj *berthv1alpha1.ClusterQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := berthv1alpha1.ClusterQueueReference(obj.Name)
	q, ok := m.queues[name]
	if !ok {
		q = newClusterQueue(name)
		m.queues[name] = q
	}
	q.strategy = obj.Spec.QueueingStrategy
	if q.strategy == "" {
		q.strategy = berthv1alpha1.BestEffortFIFO
	}
	if !ok || q.cohort != obj.Spec.CohortName {
		m.trees = nil
	}
	q.cohort = obj.Spec.CohortName
	if fair := m.afs != nil && fairMode(obj); fair != q.fair {
		q.fair = fair
		q.rebucket()
	}
	if q.fair {
		q.quota = nominalQuota(obj)
		for key, lq := range m.locals {
			if lq.clusterQueue == name {
				q.locals[key] = lq
			}
		}
		m.rescore(q)
	}
	m.activateTree(name)
}

// DeleteClusterQueue drops a queue and its pending workloads; the
// controllers add them again if the queue comes back.
func (m *Manager) DeleteClusterQueue(name berthv1alpha1.ClusterQueueReference) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queues[name]
	if !ok {
		return
	}
	for key := range q.of {
		delete(m.where, key)
	}
	for key := range q.inFlight {
		delete(m.where, key)
	}
	delete(m.queues, name)
	m.trees = nil
}

// AddOrUpdateCohort records a cohort's parent, so that events re-activate
// the whole tree.
func (m *Manager) AddOrUpdateCohort(obj *berthv1alpha1.Cohort) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parents[berthv1alpha1.CohortReference(obj.Name)] = obj.Spec.ParentName
	m.trees = nil
	m.activateAll()
}

// DeleteCohort forgets a cohort's parent.
func (m *Manager) DeleteCohort(name berthv1alpha1.CohortReference) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parents, name)
	m.trees = nil
	m.activateAll()
}

// AddOrUpdateWorkload queues a pending workload in a ClusterQueue, or
// updates it. A change of priority re-sorts it at once. A change of spec
// (generation) or priority re-activates a set-aside workload; a status-only
// change does not, so that writing a pending message does not loop. A new
// workload joining a set-aside bucket behind its head stays set aside: it
// needs what the head needs and has no higher priority.
func (m *Manager) AddOrUpdateWorkload(wl *berthv1alpha1.Workload, cq berthv1alpha1.ClusterQueueReference) error {
	info := workload.NewInfo(wl)
	shape := shapeOf(info)
	m.mu.Lock()
	defer m.unlock()
	if m.ordering.PodsReadyByCreation {
		info.QueueTime = m.ordering.QueueTime(wl)
	}
	q, ok := m.queues[cq]
	if !ok {
		return ErrClusterQueueNotFound
	}
	if old, ok := m.where[info.Key]; ok && old != cq {
		m.removeLocked(info.Key)
	}
	m.where[info.Key] = cq
	if known := q.version(info.Key); known != nil && wl.ResourceVersion != "" && known.Obj.ResourceVersion == wl.ResourceVersion {
		// The version already queued or popped: a periodic resync.
		return nil
	}
	delete(q.inFlight, info.Key)
	shape = q.bucketKey(info, shape)
	if b := q.of[info.Key]; b != nil {
		prev, _ := b.heap.get(info.Key)
		if b.aside && b.shape == shape && prev.Obj.Generation == wl.Generation && prev.Priority == info.Priority {
			b.heap.pushOrUpdate(info)
			return nil
		}
		q.remove(info.Key)
	}
	if b := q.push(info, shape); b.aside {
		if b.head() != info {
			m.toTell = append(m.toTell, q.tell(b, b.head())...)
			return nil
		}
		q.putBack(b)
	}
	m.wake()
	return nil
}

// DeleteWorkload drops a workload, whatever its state, and returns the
// ClusterQueue that queued it, empty if none.
func (m *Manager) DeleteWorkload(key string) berthv1alpha1.ClusterQueueReference {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeLocked(key)
}

// removeLocked drops the workload with key from its queue and returns the
// queue, empty if it held none.
func (m *Manager) removeLocked(key string) berthv1alpha1.ClusterQueueReference {
	name, ok := m.where[key]
	if !ok {
		return ""
	}
	delete(m.where, key)
	if q := m.queues[name]; q != nil {
		q.remove(key)
		delete(q.inFlight, key)
		delete(q.told, key)
	}
	return name
}

// QueueInadmissible re-activates the set-aside workloads of cq and of every
// queue in its cohort tree. Call it on any event that could let a workload
// fit: quota freed or changed, a workload finished or deleted.
func (m *Manager) QueueInadmissible(cq berthv1alpha1.ClusterQueueReference) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.activateTree(cq)
}

// QueueAllInadmissible re-activates every set-aside workload, for events
// whose reach is unclear (a ResourceFlavor changed).
func (m *Manager) QueueAllInadmissible() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.activateAll()
}

func (m *Manager) activateTree(name berthv1alpha1.ClusterQueueReference) {
	q, ok := m.queues[name]
	if !ok {
		return
	}
	if q.cohort == "" {
		m.activate(q)
		return
	}
	if m.trees == nil {
		m.trees = map[berthv1alpha1.CohortReference][]*clusterQueue{}
		for _, other := range m.queues {
			if other.cohort != "" {
				root := m.rootOf(other.cohort)
				m.trees[root] = append(m.trees[root], other)
			}
		}
	}
	for _, other := range m.trees[m.rootOf(q.cohort)] {
		m.activate(other)
	}
}

func (m *Manager) activateAll() {
	for _, q := range m.queues {
		m.activate(q)
	}
}

func (m *Manager) activate(q *clusterQueue) {
	q.activate()
	m.wake()
}

// rootOf follows parents to the root, stopping on a cycle.
func (m *Manager) rootOf(c berthv1alpha1.CohortReference) berthv1alpha1.CohortReference {
	seen := map[berthv1alpha1.CohortReference]bool{}
	for !seen[c] {
		seen[c] = true
		p := m.parents[c]
		if p == "" {
			return c
		}
		c = p
	}
	return c
}

// Mark is how often each queue was activated at one moment.
type Mark map[berthv1alpha1.ClusterQueueReference]int64

// Mark records the queues' activations. A cycle takes it before its
// snapshot and passes it to Heads: an activation after the snapshot then
// counts as news when a head goes back, even if it came before the head
// was popped, so the head is tried again on the newer state.
func (m *Manager) Mark() Mark {
	m.mu.Lock()
	defer m.mu.Unlock()
	mark := make(Mark, len(m.queues))
	for name, q := range m.queues {
		mark[name] = q.activations
	}
	return mark
}

// Heads pops the head of every queue not in skip, in queue name order.
// Popped heads are in flight until Requeue or Done. Their activations are
// those of mark, or the current ones when mark is nil.
func (m *Manager) Heads(skip map[berthv1alpha1.ClusterQueueReference]bool, mark Mark) []Head {
	m.mu.Lock()
	defer m.mu.Unlock()
	heads := make([]Head, 0, len(m.queues))
	for name, q := range m.queues {
		if skip[name] {
			continue
		}
		if info := q.pop(); info != nil {
			activations := q.activations
			if mark != nil {
				activations = -1
				if a, ok := mark[name]; ok {
					activations = a
				}
			}
			heads = append(heads, Head{Info: info, ClusterQueue: name, activations: activations, popped: info, shape: q.inFlight[info.Key].shape})
		}
	}
	sort.Slice(heads, func(i, j int) bool { return heads[i].ClusterQueue < heads[j].ClusterQueue })
	return heads
}

// Park keeps the workloads queued behind h that have its shape out of the
// rest of the cycle: h did not fit and could not make room on the cycle's
// snapshot, so neither can they. EndCycle brings them back; Requeue decides
// whether they are set aside until an event. After an event since the
// cycle's mark the snapshot is outdated and they might fit on a newer one,
// but they are parked all the same: the event's own cycle, next, tries them
// on a fresh snapshot, while trying each of them on the stale one costs as
// much as all the rest of a busy cycle.
func (m *Manager) Park(h Head) {
	m.mu.Lock()
	defer m.unlock()
	if q := m.queues[h.ClusterQueue]; q != nil && q.strategy == berthv1alpha1.BestEffortFIFO {
		b := q.bucketFor(q.flightKey(h), h.Info)
		q.park(b)
		m.toTell = append(m.toTell, q.tell(b, h.Info)...)
	}
}

// EndCycle brings back every bucket parked during the cycle. Call it after
// the cycle's heads are requeued.
func (m *Manager) EndCycle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.queues {
		q.unparkAll()
	}
}

// Requeue puts back a head that was not admitted. It does nothing if the
// workload was updated or deleted since it was popped: the newer state wins.
// An inadmissible head of a BestEffortFIFO queue is set aside with its
// bucket, unless an event came after the cycle's mark or a workload that
// was not tried went ahead of it in the bucket.
func (m *Manager) Requeue(h Head, reason RequeueReason) {
	m.mu.Lock()
	defer m.unlock()
	q := m.queues[h.ClusterQueue]
	if q == nil || q.inFlight[h.Info.Key].info != h.popped {
		return
	}
	key := q.flightKey(h)
	delete(q.inFlight, h.Info.Key)
	info := h.Info
	b := q.push(info, key)
	fresh := q.activations == h.activations
	switch {
	case reason == RequeueInadmissible && q.strategy == berthv1alpha1.BestEffortFIFO && fresh && b.head() == info:
		q.setAside(b)
		m.toTell = append(m.toTell, q.tell(b, info)...)
	case reason == RequeueInadmissible && q.strategy == berthv1alpha1.StrictFIFO:
		// Nothing behind the head is tried while it does not fit.
		q.putBack(b)
		m.toTell = append(m.toTell, q.tellAll(info)...)
		if !fresh {
			m.wake()
		}
	case reason == RequeueRetry:
		q.putBack(b)
		m.wake()
	default:
		q.putBack(b)
		if !fresh {
			m.wake()
		}
	}
}

// Done forgets a head that was admitted or dropped.
func (m *Manager) Done(h Head) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[h.ClusterQueue]; q != nil && q.inFlight[h.Info.Key].info == h.popped {
		delete(q.inFlight, h.Info.Key)
		delete(q.told, h.Info.Key)
		delete(m.where, h.Info.Key)
	}
}

// Queued reports whether key waits in cq, popped or not.
func (m *Manager) Queued(key string, cq berthv1alpha1.ClusterQueueReference) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.where[key] == cq
}

// Overtaken reports whether key waits in cq behind another workload that
// is tried before it and whose outcome decides whether key is tried at
// all: the head of its bucket, or the head of a StrictFIFO queue.
func (m *Manager) Overtaken(key string, cq berthv1alpha1.ClusterQueueReference) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[cq]
	if q == nil || m.where[key] != cq {
		return false
	}
	b := q.of[key]
	if b == nil {
		// Popped by the cycle under way.
		return false
	}
	if b.head().Key != key {
		return true
	}
	if q.strategy != berthv1alpha1.StrictFIFO {
		return false
	}
	top, ok := q.ready.top()
	return ok && top.head().Key != key
}

// Pending is the number of workloads waiting in a queue, set aside or not.
func (m *Manager) Pending(cq berthv1alpha1.ClusterQueueReference) int {
	active, inadmissible := m.PendingCounts(cq)
	return active + inadmissible
}

// PendingCounts splits a queue's waiting workloads into those the
// scheduler tries (popped ones included) and those set aside.
func (m *Manager) PendingCounts(cq berthv1alpha1.ClusterQueueReference) (active, inadmissible int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[cq]
	if q == nil {
		return 0, 0
	}
	for _, b := range q.buckets {
		if b.aside {
			inadmissible += b.heap.len()
		}
	}
	return q.queued() - inadmissible + len(q.inFlight), inadmissible
}

// Order returns the keys of a queue's active workloads in the order they
// would be popped, set-aside workloads excluded. It is for tests and
// debugging: it sorts a copy, O(n log n).
func (m *Manager) Order(cq berthv1alpha1.ClusterQueueReference) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[cq]
	if q == nil {
		return nil
	}
	items := q.workloads(false)
	if q.fair {
		SortByShare(items, func(lq string) float64 { return q.shares[lq] })
	} else {
		Sort(items)
	}
	keys := make([]string, len(items))
	for i, info := range items {
		keys[i] = info.Key
	}
	return keys
}

// Inadmissible returns the keys of a queue's set-aside workloads, sorted.
func (m *Manager) Inadmissible(cq berthv1alpha1.ClusterQueueReference) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[cq]
	if q == nil {
		return nil
	}
	var keys []string
	for _, info := range q.workloads(true) {
		keys = append(keys, info.Key)
	}
	sort.Strings(keys)
	return keys
}

// SetAside reports whether key waits in cq set aside as inadmissible,
// until an event could let it fit.
func (m *Manager) SetAside(key string, cq berthv1alpha1.ClusterQueueReference) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[cq]
	if q == nil || m.where[key] != cq {
		return false
	}
	b := q.of[key]
	return b != nil && b.aside
}
