package cache

import (
	"errors"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// ErrAlreadyHoldsQuota is returned by AssumeWorkload for a workload that
// already holds quota.
var ErrAlreadyHoldsQuota = errors.New("workload already holds quota")

// Cache is the live quota state. It is safe for concurrent use.
//
// Spec changes (queues, cohorts, flavors) mark the tree stale; it is
// rebuilt once, at the next snapshot, so that a burst of events at start-up
// costs one rebuild. Workload changes update usage in place.
type Cache struct {
	mu sync.Mutex

	in      treeInputs
	t       *tree // nil when stale
	byKey   map[string]*workload.Info
	assumed map[string]bool
	// evicting are the workloads the scheduler told to stop. The mark
	// outlives updates until the quota is released: the informers may
	// still deliver versions of the workload from before the eviction.
	evicting map[string]bool
	// notReady, when tracked (TrackPodsReady), are the workloads holding
	// quota, not told to stop, whose pods are not all ready; allReady is
	// called when the last of them is ready.
	notReady     map[string]bool
	allReady     func()
	waitingReady bool

	// fabrics, when set, gives the nodes of the flavors that name a
	// Topology; placed are the workloads holding quota whose pods were
	// admitted to places in them.
	fabrics Fabrics
	placed  map[string]*workload.Info
}

// New returns an empty Cache.
func New() *Cache {
	return &Cache{
		in: treeInputs{
			clusterQueues: map[berthv1alpha1.ClusterQueueReference]*berthv1alpha1.ClusterQueue{},
			cohorts:       map[berthv1alpha1.CohortReference]*berthv1alpha1.Cohort{},
			flavors:       map[berthv1alpha1.ResourceFlavorReference]*berthv1alpha1.ResourceFlavor{},
			checks:        map[berthv1alpha1.AdmissionCheckReference]string{},
			states:        map[berthv1alpha1.ClusterQueueReference]*cqState{},
		},
		byKey:    map[string]*workload.Info{},
		assumed:  map[string]bool{},
		evicting: map[string]bool{},
		placed:   map[string]*workload.Info{},
	}
}

// AddOrUpdateClusterQueue adds or replaces a ClusterQueue. The cache keeps
// obj; the caller must not mutate it afterwards.
func (c *Cache) AddOrUpdateClusterQueue(obj *berthv1alpha1.ClusterQueue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.clusterQueues[berthv1alpha1.ClusterQueueReference(obj.Name)] = obj
	c.t = nil
}

// DeleteClusterQueue removes a ClusterQueue. Its workloads stay accounted
// under its name until they are deleted, so a queue re-created with the
// same name sees them again.
func (c *Cache) DeleteClusterQueue(name berthv1alpha1.ClusterQueueReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.in.clusterQueues, name)
	c.t = nil
}

// AddOrUpdateCohort adds or replaces a Cohort object.
func (c *Cache) AddOrUpdateCohort(obj *berthv1alpha1.Cohort) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.cohorts[berthv1alpha1.CohortReference(obj.Name)] = obj
	c.t = nil
}

// DeleteCohort removes a Cohort object. The cohort lives on, without quota
// or parent, while queues name it.
func (c *Cache) DeleteCohort(name berthv1alpha1.CohortReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.in.cohorts, name)
	c.t = nil
}

// AddOrUpdateResourceFlavor adds or replaces a ResourceFlavor.
func (c *Cache) AddOrUpdateResourceFlavor(obj *berthv1alpha1.ResourceFlavor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.flavors[berthv1alpha1.ResourceFlavorReference(obj.Name)] = obj
	c.t = nil
}

// DeleteResourceFlavor removes a ResourceFlavor; queues naming it become
// inactive.
func (c *Cache) DeleteResourceFlavor(name berthv1alpha1.ResourceFlavorReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.in.flavors, name)
	c.t = nil
}

// AddOrUpdateAdmissionCheck records whether an AdmissionCheck is active:
// queues naming one that is not are inactive.
func (c *Cache) AddOrUpdateAdmissionCheck(obj *berthv1alpha1.AdmissionCheck) {
	why := "its controller has not said it is active"
	if cond := meta.FindStatusCondition(obj.Status.Conditions, berthv1alpha1.ConditionActive); cond != nil {
		why = ""
		if cond.Status != metav1.ConditionTrue {
			why = cond.Message
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	name := berthv1alpha1.AdmissionCheckReference(obj.Name)
	if old, ok := c.in.checks[name]; ok && old == why {
		return
	}
	c.in.checks[name] = why
	c.t = nil
}

// DeleteAdmissionCheck forgets an AdmissionCheck; queues naming it become
// inactive.
func (c *Cache) DeleteAdmissionCheck(name berthv1alpha1.AdmissionCheckReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.in.checks, name)
	c.t = nil
}

// AddOrUpdateWorkload records wl if it holds quota (reserved or admitted,
// and not finished) and forgets it otherwise. It replaces an assumed entry
// for the same workload. It reports whether wl is now tracked.
func (c *Cache) AddOrUpdateWorkload(wl *berthv1alpha1.Workload) bool {
	info := workload.NewInfo(wl)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.settleReady()
	c.remove(info.Key)
	if info.ClusterQueue == "" || workload.IsFinished(wl) {
		delete(c.evicting, info.Key)
		return false
	}
	if c.evicting[info.Key] && !info.Evicting {
		cp := *info
		cp.Evicting = true
		info = &cp
	}
	c.add(info)
	return true
}

// DeleteWorkload forgets the workload with key "namespace/name". It
// returns the ClusterQueue whose quota the workload held, empty if none,
// so that the caller can wake the workloads waiting for that quota.
func (c *Cache) DeleteWorkload(key string) berthv1alpha1.ClusterQueueReference {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.evicting, key)
	info, ok := c.byKey[key]
	if !ok {
		return ""
	}
	c.remove(key)
	c.settleReady()
	return info.ClusterQueue
}

// LocalQueueUsage is the quota held by the workloads of each LocalQueue,
// by its key, per resource over all flavors: the samples of admission fair
// sharing.
func (c *Cache) LocalQueueUsage() map[string]resources.Requests {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]resources.Requests{}
	for _, info := range c.byKey {
		key := workload.LocalQueueKey(info.Obj)
		r := out[key]
		if r == nil {
			r = resources.Requests{}
			out[key] = r
		}
		for fr, v := range info.Usage {
			r[fr.Resource] = resources.Add(r[fr.Resource], v)
		}
	}
	return out
}

// Shrinks reports whether wl, a version of a workload the cache holds,
// holds less of some flavor and resource than the cache has for it: an
// elastic job gave back the quota of pods it no longer runs, and the
// workloads waiting for that quota may be tried again.
func (c *Cache) Shrinks(wl *berthv1alpha1.Workload) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	have, ok := c.byKey[workload.Key(wl)]
	if !ok || wl.Status.Admission == nil {
		return false
	}
	now := workload.AdmissionUsage(wl.Status.Admission)
	for fr, v := range have.Usage {
		if now[fr] < v {
			return true
		}
	}
	return false
}

// HoldsQuota reports whether the workload with key holds quota now,
// confirmed or assumed.
func (c *Cache) HoldsQuota(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byKey[key]
	return ok
}

// IsAssumed reports whether the scheduler admitted the workload with key
// and the informers have not yet confirmed it.
func (c *Cache) IsAssumed(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.assumed[key]
}

// AssumedSince reports whether the scheduler assumed wl admitted at wl's
// version or a later one: wl, pending, is then an outdated view that must
// neither release the assumed quota nor queue the workload again. A
// pending version newer than the admission's means the workload changed
// after it (the admission failed, or the workload was evicted since) and is
// to be handled as pending. Resource versions are compared as numbers, as
// etcd issues them.
func (c *Cache) AssumedSince(wl *berthv1alpha1.Workload) bool {
	key := workload.Key(wl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.assumed[key] {
		return false
	}
	assumed, err1 := strconv.ParseUint(c.byKey[key].Obj.ResourceVersion, 10, 64)
	seen, err2 := strconv.ParseUint(wl.ResourceVersion, 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	return seen <= assumed
}

// AssumeWorkload records that the scheduler admitted info (ClusterQueue and
// Usage set) before the write reached the API, so that the next cycle does
// not hand out the same quota.
func (c *Cache) AssumeWorkload(info *workload.Info) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[info.Key]; ok {
		return ErrAlreadyHoldsQuota
	}
	delete(c.evicting, info.Key)
	c.add(info)
	c.assumed[info.Key] = true
	c.settleReady()
	return nil
}

// UpdateAssumed records wl, as the API server returned it, as the object
// of an assumed admission, so that the next write about the workload (a
// preemption, say) carries its current resourceVersion even before the
// informers deliver it. A workload no longer assumed is left alone.
func (c *Cache) UpdateAssumed(wl *berthv1alpha1.Workload) {
	key := workload.Key(wl)
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.byKey[key]
	if !ok || !c.assumed[key] {
		return
	}
	cp := *info
	cp.Obj = wl
	c.in.states[info.ClusterQueue].workloads.writable()[key] = &cp
	c.byKey[key] = &cp
}

// ForgetWorkload rolls back AssumeWorkload after a failed write. A workload
// that the controllers have since confirmed is kept.
func (c *Cache) ForgetWorkload(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assumed[key] {
		c.remove(key)
		c.settleReady()
	}
}

// MarkEvicting records that the workload with key was told to stop, until
// its quota is released. Preemptors then wait for its quota instead of
// preempting more.
func (c *Cache) MarkEvicting(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.byKey[key]
	if !ok {
		return
	}
	c.evicting[key] = true
	if info.Evicting {
		return
	}
	cp := *info
	cp.Evicting = true
	st := c.in.states[info.ClusterQueue]
	st.workloads.writable()[key] = &cp
	c.byKey[key] = &cp
	c.trackReady(&cp, true)
	c.settleReady()
}

// TrackPodsReady has the cache track which workloads holding quota have
// pods that are not all ready (see NotReady), and call allReady, under the
// cache's lock, when none is left: allReady must neither block nor call
// the cache. Call it before any workload is added.
func (c *Cache) TrackPodsReady(allReady func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notReady, c.allReady = map[string]bool{}, allReady
}

// NotReady is how many workloads holding quota have pods that are not all
// ready, assumed admissions included and workloads told to stop excluded,
// and the first of them by key; 0 when not tracked.
func (c *Cache) NotReady() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := ""
	for key := range c.notReady {
		if first == "" || key < first {
			first = key
		}
	}
	return len(c.notReady), first
}

// trackReady records whether info is a workload whose pods the next
// admission waits for.
func (c *Cache) trackReady(info *workload.Info, held bool) {
	if c.notReady == nil {
		return
	}
	if held && !info.Evicting && !workload.IsConditionTrue(info.Obj, berthv1alpha1.WorkloadPodsReady) {
		c.notReady[info.Key] = true
	} else {
		delete(c.notReady, info.Key)
	}
}

// settleReady calls allReady if the last workload whose pods were not
// ready is ready now, or gone. It runs once a change is complete, so that
// an update, which removes a workload and adds it again, does not call it
// in between.
func (c *Cache) settleReady() {
	if c.notReady == nil {
		return
	}
	if len(c.notReady) > 0 {
		c.waitingReady = true
		return
	}
	if c.waitingReady {
		c.waitingReady = false
		c.allReady()
	}
}

// Snapshot returns a frozen copy of the cache for one cycle.
func (c *Cache) Snapshot() *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.tree().snapshot(c.in.flavors)
	if c.fabrics != nil {
		c.addFabrics(s)
	}
	return s
}

func (c *Cache) tree() *tree {
	if c.t == nil {
		c.t = buildTree(c.in)
	}
	return c.t
}

func (c *Cache) add(info *workload.Info) {
	st, ok := c.in.states[info.ClusterQueue]
	if !ok {
		st = newCQState()
		c.in.states[info.ClusterQueue] = st
	}
	st.workloads.writable()[info.Key] = info
	st.usage.Add(info.Usage)
	c.byKey[info.Key] = info
	if len(info.Placements) > 0 {
		c.placed[info.Key] = info
	}
	c.trackReady(info, true)
	if c.t != nil {
		if cq := c.t.clusterQueues[info.ClusterQueue]; cq != nil {
			cq.addUsage(info.Usage, 1)
		}
	}
}

func (c *Cache) remove(key string) {
	info, ok := c.byKey[key]
	if !ok {
		return
	}
	delete(c.byKey, key)
	delete(c.assumed, key)
	delete(c.placed, key)
	c.trackReady(info, false)
	st := c.in.states[info.ClusterQueue]
	delete(st.workloads.writable(), key)
	st.usage.Sub(info.Usage)
	if c.t != nil {
		if cq := c.t.clusterQueues[info.ClusterQueue]; cq != nil {
			cq.addUsage(info.Usage, -1)
		}
	}
}

// ClusterQueueUsage is what the controllers need for a ClusterQueue's
// status: per flavor and resource, the quota its workloads hold (assumed
// ones included) and the part of it above the nominal quota, and how many
// workloads hold quota.
func (c *Cache) ClusterQueueUsage(name berthv1alpha1.ClusterQueueReference) (usage, borrowed resources.Usage, workloads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	usage, borrowed = resources.Usage{}, resources.Usage{}
	st, ok := c.in.states[name]
	if !ok {
		return usage, borrowed, 0
	}
	cq := c.tree().clusterQueues[name]
	for fr, v := range st.usage {
		usage[fr] = v
		if cq != nil {
			if b := v - cq.Nominal(fr); b > 0 {
				borrowed[fr] = b
			}
		}
	}
	return usage, borrowed, len(st.workloads.m)
}

// AdmittedCount is how many of the workloads holding quota in a
// ClusterQueue are admitted: the others wait on admission checks.
func (c *Cache) AdmittedCount(name berthv1alpha1.ClusterQueueReference) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.in.states[name]
	if !ok {
		return 0
	}
	n := 0
	for _, info := range st.workloads.m {
		if len(info.Obj.Status.AdmissionChecks) == 0 || workload.IsAdmitted(info.Obj) {
			n++
		}
	}
	return n
}

// WeightedShare is a ClusterQueue's weighted share of what its cohort
// lends (see berthv1alpha1.FairSharingStatus); 0 for one not cached.
func (c *Cache) WeightedShare(name berthv1alpha1.ClusterQueueReference) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cq := c.tree().clusterQueues[name]; cq != nil {
		return cq.WeightedShare()
	}
	return 0
}

// CohortCycle is the cycle of parentName links among the cohorts above a
// ClusterQueue, e.g. "a -> b -> c -> a"; empty when there is none.
func (c *Cache) CohortCycle(name berthv1alpha1.ClusterQueueReference) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cq := c.tree().clusterQueues[name]; cq != nil {
		return cq.cohortCycle()
	}
	return ""
}

// ReservedUsage is the quota held in a ClusterQueue by workloads whose
// quota is reserved and that still wait on admission checks.
func (c *Cache) ReservedUsage(name berthv1alpha1.ClusterQueueReference) resources.Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := resources.Usage{}
	st, ok := c.in.states[name]
	if !ok {
		return out
	}
	for _, info := range st.workloads.m {
		if len(info.Obj.Status.AdmissionChecks) > 0 && !workload.IsAdmitted(info.Obj) {
			for fr, v := range info.Usage {
				out[fr] = resources.Add(out[fr], v)
			}
		}
	}
	return out
}

// CohortUsage is what the ClusterQueues of a cohort's subtree hold, and
// the quota of that subtree: the cohort's own and what its members lend
// it.
type CohortUsage struct {
	Name         berthv1alpha1.CohortReference
	Usage, Quota resources.Usage
}

// CohortsAbove is the usage of each cohort above a ClusterQueue, its
// parent first.
func (c *Cache) CohortsAbove(name berthv1alpha1.ClusterQueueReference) []CohortUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	cq := c.tree().clusterQueues[name]
	if cq == nil {
		return nil
	}
	var out []CohortUsage
	for p := cq.parent; p != nil; p = p.parent {
		cu := CohortUsage{Name: p.Name, Usage: resources.Usage{}, Quota: resources.Usage{}}
		for fr, i := range p.index {
			cu.Quota[fr] = p.quotas[i].subtree
		}
		c.addSubtreeUsage(p, cu.Usage)
		out = append(out, cu)
		if p.Cycle != "" {
			// A cohort in a cycle is its own root; never loop.
			break
		}
	}
	return out
}

func (c *Cache) addSubtreeUsage(co *Cohort, into resources.Usage) {
	for _, q := range co.ClusterQueues {
		if st := c.in.states[q.Name]; st != nil {
			for fr, v := range st.usage {
				into[fr] = resources.Add(into[fr], v)
			}
		}
	}
	for _, child := range co.ChildCohorts {
		if child.Cycle == "" {
			c.addSubtreeUsage(child, into)
		}
	}
}
