package queue

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// AdmissionFairSharing is how LocalQueues' recent usage is counted, for
// the ClusterQueues that order their workloads by it.
type AdmissionFairSharing struct {
	// HalfLife is how long a sample takes to weigh half as much; 0 keeps
	// only the latest sample.
	HalfLife time.Duration
	// Interval is how often the usage is sampled.
	Interval time.Duration
	// ResourceWeights weigh each resource; absent ones weigh 1.
	ResourceWeights map[corev1.ResourceName]float64
}

// decay is the weight of a new sample taken elapsed after the previous
// one: 1 - 0.5^(elapsed/HalfLife). The older samples keep 1 minus it.
func (a *AdmissionFairSharing) decay(elapsed time.Duration) float64 {
	if a.HalfLife <= 0 {
		return 1
	}
	if elapsed <= 0 {
		return 0
	}
	return 1 - math.Pow(0.5, float64(elapsed)/float64(a.HalfLife))
}

func (a *AdmissionFairSharing) weightOf(r corev1.ResourceName) float64 {
	if w, ok := a.ResourceWeights[r]; ok {
		return w
	}
	return 1
}

// localQueue is what admission fair sharing knows of a LocalQueue: its
// weight and its recent usage, in canonical units, summed over flavors.
type localQueue struct {
	key          string
	clusterQueue berthv1alpha1.ClusterQueueReference
	// weight is the queue's weight; 0 puts it after every other queue.
	weight     float64
	consumed   map[corev1.ResourceName]float64
	lastUpdate time.Time
}

// weightOf is a fair-sharing weight; 1 when absent.
func weightOf(fs *berthv1alpha1.FairSharing) float64 {
	if fs == nil || fs.Weight == nil {
		return 1
	}
	return fs.Weight.AsApproximateFloat64()
}

// share is the queue's usage as a fraction of quota, each resource's part
// weighed, divided by the queue's weight: what its ClusterQueue orders by.
// Resources without nominal quota do not count. +Inf for weight 0, so
// that such a queue goes last.
func (lq *localQueue) share(afs *AdmissionFairSharing, quota map[corev1.ResourceName]int64) float64 {
	if lq.weight <= 0 {
		return math.Inf(1)
	}
	var sum float64
	for r, v := range lq.consumed {
		if q := quota[r]; q > 0 && v > 0 {
			sum += afs.weightOf(r) * v / float64(q)
		}
	}
	return sum / lq.weight
}

// restore takes the usage recorded in a LocalQueue's status: it survives
// a restart of the controller.
func (lq *localQueue) restore(st *berthv1alpha1.FairSharingStatus) {
	if st == nil || st.AdmissionFairSharingStatus == nil {
		return
	}
	lq.consumed = map[corev1.ResourceName]float64{}
	for r, q := range st.AdmissionFairSharingStatus.ConsumedResources {
		lq.consumed[r] = q.AsApproximateFloat64() * canonical(r)
	}
	lq.lastUpdate = st.AdmissionFairSharingStatus.LastUpdate.Time
}

// sample folds the queue's current usage into its history.
func (lq *localQueue) sample(afs *AdmissionFairSharing, now time.Time, current resources.Requests) {
	elapsed := afs.Interval
	if !lq.lastUpdate.IsZero() {
		elapsed = now.Sub(lq.lastUpdate)
	}
	a := afs.decay(elapsed)
	for r, v := range lq.consumed {
		lq.consumed[r] = (1 - a) * v
	}
	for r, v := range current {
		lq.consumed[r] += a * float64(v)
	}
	lq.lastUpdate = now
}

// charge counts an admission at once, as one interval's worth of its
// usage, so that a queue that has many workloads admitted between two
// samples goes back in line after each.
func (lq *localQueue) charge(afs *AdmissionFairSharing, usage resources.Usage) {
	a := afs.decay(afs.Interval)
	for fr, v := range usage {
		lq.consumed[fr.Resource] += a * float64(v)
	}
}

// status is the usage as a LocalQueue's status shows it.
func (lq *localQueue) status(share float64) *berthv1alpha1.FairSharingStatus {
	list := corev1.ResourceList{}
	for r, v := range lq.consumed {
		// In milli-units: the decayed usage is rarely whole.
		if milli := math.Round(v / canonical(r) * 1000); milli >= 1 && milli < math.MaxInt64 {
			list[r] = *resource.NewMilliQuantity(int64(milli), resource.DecimalSI)
		}
	}
	st := &berthv1alpha1.FairSharingStatus{
		WeightedShare:              perMille(share),
		AdmissionFairSharingStatus: &berthv1alpha1.AdmissionFairSharingStatus{ConsumedResources: list},
	}
	if !lq.lastUpdate.IsZero() {
		st.AdmissionFairSharingStatus.LastUpdate = metav1.NewTime(lq.lastUpdate)
	}
	return st
}

// canonical is how many canonical units of r (see resources.Value) make
// one unit.
func canonical(r corev1.ResourceName) float64 {
	if r == corev1.ResourceCPU {
		return 1000
	}
	return 1
}

// perMille is a share per mille, the largest int64 for +Inf.
func perMille(share float64) int64 {
	if v := math.Round(share * 1000); v < math.MaxInt64 {
		return int64(v)
	}
	return math.MaxInt64
}

// nominalQuota sums a ClusterQueue's nominal quota per resource over its
// flavors: the measure of its LocalQueues' usage.
func nominalQuota(obj *berthv1alpha1.ClusterQueue) map[corev1.ResourceName]int64 {
	quota := map[corev1.ResourceName]int64{}
	for _, g := range obj.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				quota[r.Name] = resources.Add(quota[r.Name], resources.Value(r.Name, r.NominalQuota))
			}
		}
	}
	return quota
}

// fairMode reports whether obj orders its workloads by LocalQueue usage.
func fairMode(obj *berthv1alpha1.ClusterQueue) bool {
	return obj.Spec.AdmissionScope != nil && obj.Spec.AdmissionScope.AdmissionMode == berthv1alpha1.UsageBasedAdmissionFairSharing
}

// SetAdmissionFairSharing turns admission fair sharing on; call it before
// any queue is added.
func (m *Manager) SetAdmissionFairSharing(afs *AdmissionFairSharing) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.afs = afs
}

// AddOrUpdateLocalQueue records a LocalQueue's weight and, the first time,
// the usage its status holds.
func (m *Manager) AddOrUpdateLocalQueue(obj *berthv1alpha1.LocalQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.afs == nil {
		return
	}
	key := obj.Namespace + "/" + obj.Name
	lq, ok := m.locals[key]
	if !ok {
		lq = &localQueue{key: key, consumed: map[corev1.ResourceName]float64{}}
		lq.restore(obj.Status.FairSharing)
		m.locals[key] = lq
	}
	if old := m.queues[lq.clusterQueue]; old != nil && lq.clusterQueue != obj.Spec.ClusterQueue {
		delete(old.locals, key)
		m.rescore(old)
	}
	lq.clusterQueue, lq.weight = obj.Spec.ClusterQueue, weightOf(obj.Spec.FairSharing)
	if q := m.queues[lq.clusterQueue]; q != nil {
		q.locals[key] = lq
		m.rescore(q)
	}
}

// DeleteLocalQueue forgets a LocalQueue's usage.
func (m *Manager) DeleteLocalQueue(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lq, ok := m.locals[key]
	if !ok {
		return
	}
	delete(m.locals, key)
	if q := m.queues[lq.clusterQueue]; q != nil {
		delete(q.locals, key)
		delete(q.shares, key)
	}
}

// Charge counts an admission in its LocalQueue's usage at once, and
// re-orders its ClusterQueue if it orders by that usage.
func (m *Manager) Charge(h Head, usage resources.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.afs == nil {
		return
	}
	lq := m.locals[workload.LocalQueueKey(h.Info.Obj)]
	if lq == nil {
		return
	}
	lq.charge(m.afs, usage)
	if q := m.queues[lq.clusterQueue]; q != nil && q.fair {
		q.shares[lq.key] = lq.share(m.afs, q.quota)
		q.reorder(lq.key)
	}
}

// SampleUsage folds each LocalQueue's current usage, by key, into its
// history, and re-orders the ClusterQueues that order by it. It returns
// the keys of the LocalQueues sampled, whose status is now out of date.
func (m *Manager) SampleUsage(now time.Time, current map[string]resources.Requests) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.afs == nil {
		return nil
	}
	keys := make([]string, 0, len(m.locals))
	for key, lq := range m.locals {
		lq.sample(m.afs, now, current[key])
		keys = append(keys, key)
	}
	for _, q := range m.queues {
		m.rescore(q)
	}
	return keys
}

// LocalQueueFairSharing is the status of a LocalQueue's usage, nil when
// admission fair sharing is off or the queue is unknown.
func (m *Manager) LocalQueueFairSharing(key string) *berthv1alpha1.FairSharingStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	lq := m.locals[key]
	if m.afs == nil || lq == nil {
		return nil
	}
	var share float64
	if q := m.queues[lq.clusterQueue]; q != nil {
		share = lq.share(m.afs, q.quota)
	}
	return lq.status(share)
}

// LocalQueueShare is the share a workload's LocalQueue is ordered by, and
// whether its ClusterQueue orders by it.
func (m *Manager) LocalQueueShare(info *workload.Info, cq berthv1alpha1.ClusterQueueReference) (float64, float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[cq]
	if q == nil || !q.fair {
		return 0, 0, false
	}
	key := workload.LocalQueueKey(info.Obj)
	weight := 1.0
	if lq := m.locals[key]; lq != nil {
		weight = lq.weight
	}
	return q.shares[key], weight, true
}

// rescore recomputes the shares of q's LocalQueues and re-orders its ready
// buckets by them.
func (m *Manager) rescore(q *clusterQueue) {
	if !q.fair {
		return
	}
	for key, lq := range q.locals {
		q.shares[key] = lq.share(m.afs, q.quota)
	}
	q.reorder("")
}

// FormatShare renders a LocalQueue's share for messages, in percent with
// three digits ("62%", "0.0138%"), or "unbounded" for weight 0.
func FormatShare(share float64) string {
	if math.IsInf(share, 1) {
		return "unbounded"
	}
	return strconv.FormatFloat(share*100, 'g', 3, 64) + "%"
}
