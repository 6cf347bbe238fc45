// Package fabric holds the controller's live view of the nodes for
// topology-aware admission: each node's labels, taints and allocatable
// resources, the requests of the pods bound to it, and the Topologies,
// from informers. From them it builds, for each scheduling cycle, the
// fabric of a flavor's nodes (pkg/engine/topology) that the engine's cache
// puts in its snapshot (cache.Fabrics).
//
// The pods are read from a cache of their own, of every pod bound to a
// node and not finished, stripped to what their requests need: admission
// counts the pods of every owner, not only Berth's, against a node's
// room.
package fabric

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/topology"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Tracker is the live view of nodes and pods. It is safe for concurrent
// use.
type Tracker struct {
	mu         sync.Mutex
	nodes      map[string]*node
	pods       map[types.UID]pod
	bound      map[string]map[string]int32
	topologies map[berthv1alpha1.TopologyReference][]string
	// generation counts the changes; built are the fabrics built at one.
	generation int64
	built      map[berthv1alpha1.ResourceFlavorReference]built

	// freed is called, at most once a second, after room may have been
	// made on a node of a Topology's flavor: set-aside workloads may fit.
	freed   func()
	waiting bool
}

// node is what admission needs of a node.
type node struct {
	labels map[string]string
	taints []corev1.Taint
	alloc  resources.Requests
	used   resources.Requests
	// usable is false for a node that is not Ready or is cordoned.
	usable bool
}

// pod is a pod bound to a node.
type pod struct {
	node     string
	requests resources.Requests
	// workload is the key of the Workload it runs for, "" for none.
	workload string
}

type built struct {
	generation int64
	rf         *berthv1alpha1.ResourceFlavor
	fabric     *topology.Fabric
}

// NewTracker returns an empty Tracker; freed is called when set-aside
// workloads may fit.
func NewTracker(freed func()) *Tracker {
	return &Tracker{
		nodes:      map[string]*node{},
		pods:       map[types.UID]pod{},
		bound:      map[string]map[string]int32{},
		topologies: map[berthv1alpha1.TopologyReference][]string{},
		built:      map[berthv1alpha1.ResourceFlavorReference]built{},
		freed:      freed,
	}
}

// SetupWithManager feeds the tracker from mgr's informers of Topologies
// and nodes, and from a cache of its own of the pods bound to nodes.
func (t *Tracker) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	pods, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		HTTPClient: mgr.GetHTTPClient(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {
			Field:     fields.OneTermNotEqualSelector("spec.nodeName", ""),
			Transform: slim,
		}},
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(pods); err != nil {
		return err
	}
	for _, h := range []struct {
		c   cache.Cache
		obj client.Object
		fn  func(obj any, gone bool)
	}{
		{mgr.GetCache(), &berthv1alpha1.Topology{}, t.topology},
		{mgr.GetCache(), &corev1.Node{}, t.node},
		{pods, &corev1.Pod{}, t.pod},
	} {
		inf, err := h.c.GetInformer(ctx, h.obj)
		if err != nil {
			return err
		}
		fn := h.fn
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { fn(obj, false) },
			UpdateFunc: func(_, obj any) { fn(obj, false) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				fn(obj, true)
			},
		}); err != nil {
			return err
		}
	}
	return nil
}

// slim keeps of a pod what its requests, its node and its Workload need.
func slim(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Spec: corev1.PodSpec{
			NodeName: p.Spec.NodeName, Overhead: p.Spec.Overhead, Resources: p.Spec.Resources,
			Containers: slimContainers(p.Spec.Containers), InitContainers: slimContainers(p.Spec.InitContainers),
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase, ContainerStatuses: slimStatuses(p.Status.ContainerStatuses),
			InitContainerStatuses: slimStatuses(p.Status.InitContainerStatuses)},
	}
	if w, ok := p.Labels[berthv1alpha1.WorkloadLabel]; ok {
		out.Labels = map[string]string{berthv1alpha1.WorkloadLabel: w}
	}
	return out, nil
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}

func slimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	if ss == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = corev1.ContainerStatus{Name: s.Name, Resources: s.Resources, AllocatedResources: s.AllocatedResources}
	}
	return out
}

// Observe takes in a Topology, a node or a pod as it is now, for a reader
// that lists them instead of watching them (kubectl berth what-if).
func (t *Tracker) Observe(obj any) {
	switch obj.(type) {
	case *berthv1alpha1.Topology:
		t.topology(obj, false)
	case *corev1.Node:
		t.node(obj, false)
	case *corev1.Pod:
		t.pod(obj, false)
	}
}

func (t *Tracker) topology(obj any, gone bool) {
	tp, ok := obj.(*berthv1alpha1.Topology)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name := berthv1alpha1.TopologyReference(tp.Name)
	if gone {
		delete(t.topologies, name)
	} else {
		levels := make([]string, len(tp.Spec.Levels))
		for i, l := range tp.Spec.Levels {
			levels[i] = l.NodeLabel
		}
		t.topologies[name] = levels
	}
	t.changed(true)
}

func (t *Tracker) node(obj any, gone bool) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.nodes[n.Name]
	if gone {
		delete(t.nodes, n.Name)
		t.changed(false)
		return
	}
	cur := &node{labels: n.Labels, alloc: resources.FromList(n.Status.Allocatable), used: resources.Requests{}, usable: usable(n)}
	for _, taint := range n.Spec.Taints {
		if taint.Effect != corev1.TaintEffectPreferNoSchedule {
			cur.taints = append(cur.taints, taint)
		}
	}
	if old != nil {
		cur.used = old.used
		if maps.Equal(old.labels, cur.labels) && maps.Equal(old.alloc, cur.alloc) && old.usable == cur.usable && slices.EqualFunc(old.taints, cur.taints, sameTaint) {
			// A heartbeat: nothing admission reads.
			t.nodes[n.Name] = cur
			return
		}
	} else {
		for _, p := range t.pods {
			if p.node == n.Name {
				addTo(cur.used, p.requests, 1)
			}
		}
	}
	t.nodes[n.Name] = cur
	t.changed(true)
}

// usable reports whether pods can be placed on n: Ready, not cordoned.
func usable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func sameTaint(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}

func (t *Tracker) pod(obj any, gone bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, had := t.pods[p.UID]
	finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	if gone || finished || p.Spec.NodeName == "" {
		if had {
			t.unbind(p.UID, old)
			t.changed(true)
		}
		return
	}
	cur := pod{node: p.Spec.NodeName, requests: workload.RunningPodRequests(p)}
	if cur.requests == nil {
		cur.requests = resources.Requests{}
	}
	cur.requests[corev1.ResourcePods] = 1
	if w := p.Labels[berthv1alpha1.WorkloadLabel]; w != "" {
		cur.workload = p.Namespace + "/" + w
	}
	if had {
		if old.node == cur.node && old.workload == cur.workload && maps.Equal(old.requests, cur.requests) {
			return
		}
		t.unbind(p.UID, old)
	}
	t.pods[p.UID] = cur
	if n := t.nodes[cur.node]; n != nil {
		addTo(n.used, cur.requests, 1)
	}
	if cur.workload != "" {
		if t.bound[cur.workload] == nil {
			t.bound[cur.workload] = map[string]int32{}
		}
		t.bound[cur.workload][cur.node]++
	}
	t.changed(had)
}

func (t *Tracker) unbind(uid types.UID, p pod) {
	delete(t.pods, uid)
	if n := t.nodes[p.node]; n != nil {
		addTo(n.used, p.requests, -1)
	}
	if b := t.bound[p.workload]; b != nil {
		if b[p.node]--; b[p.node] <= 0 {
			delete(b, p.node)
		}
		if len(b) == 0 {
			delete(t.bound, p.workload)
		}
	}
}

// addTo adds sign times r to into.
func addTo(into, r resources.Requests, sign int64) {
	for k, v := range r {
		if sign > 0 {
			into[k] = resources.Add(into[k], v)
		} else {
			into[k] = max(0, into[k]-v)
		}
	}
}

// changed records a change; freed is set when it may have made room.
func (t *Tracker) changed(freed bool) {
	t.generation++
	if !freed || t.waiting || t.freed == nil || len(t.topologies) == 0 {
		return
	}
	t.waiting = true
	time.AfterFunc(time.Second, func() {
		t.mu.Lock()
		t.waiting = false
		t.mu.Unlock()
		t.freed()
	})
}

// Fabric is the fabric of rf's nodes, a copy the caller may change: the
// nodes with rf's node labels that are Ready and not cordoned, arranged by
// the levels of rf's Topology, each with its allocatable less the requests
// of the pods bound to it. It is nil when the Topology does not exist.
func (t *Tracker) Fabric(rf *berthv1alpha1.ResourceFlavor) *topology.Fabric {
	if rf.Spec.TopologyName == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	levels, ok := t.topologies[*rf.Spec.TopologyName]
	if !ok {
		return nil
	}
	name := berthv1alpha1.ResourceFlavorReference(rf.Name)
	if b, ok := t.built[name]; ok && b.generation == t.generation && b.rf == rf {
		return b.fabric.Clone()
	}
	var nodes []topology.Node
	for nodeName, n := range t.nodes {
		if !n.usable || !hasLabels(n.labels, rf.Spec.NodeLabels) {
			continue
		}
		free := maps.Clone(n.alloc)
		for k, v := range n.used {
			free[k] = max(0, free[k]-v)
		}
		nodes = append(nodes, topology.Node{Name: nodeName, Labels: n.labels, Taints: n.taints, Free: free})
	}
	f := topology.NewFabric(levels, nodes)
	t.built[name] = built{generation: t.generation, rf: rf, fabric: f}
	return f.Clone()
}

func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Bound is how many pods of the workload with key each node has, a copy.
func (t *Tracker) Bound(key string) map[string]int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.bound[key])
}
