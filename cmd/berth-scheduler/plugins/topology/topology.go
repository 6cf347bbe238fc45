package topology

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

// Name is the name of the plugin in the scheduler configuration.
const Name = "BerthTopology"

// Topology keeps a podset's pods inside its admission's domains; see the
// package documentation.
type Topology struct{}

var _ fwk.PreFilterPlugin = (*Topology)(nil)

// New builds the plugin. It takes no arguments.
func New(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return &Topology{}, nil
}

// Name returns the name of the plugin.
func (t *Topology) Name() string { return Name }

// assignment is the JSON of a Workload's topologyAssignment (the type is
// apis/berth/v1alpha1.TopologyAssignment, not imported so that this module
// does not require the controller's).
type assignment struct {
	Levels  []string `json:"levels"`
	Domains []struct {
		Values []string `json:"values"`
		Count  int32    `json:"count"`
	} `json:"domains"`
}

// PreFilter narrows the nodes the pod may go to to those of the domains of
// its assignment that still have room. See the package documentation.
func (t *Topology) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	raw, ok := pod.Annotations[podset.TopologyAssignmentAnnotation]
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	a, err := parse(raw)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("annotation %s: %v", podset.TopologyAssignmentAnnotation, err))
	}
	key, inGang := podset.KeyOf(pod)
	// Domains by their narrowest value, which a node's label matches first.
	last := len(a.Levels) - 1
	byLeaf := make(map[string][]int, len(a.Domains))
	for i, d := range a.Domains {
		byLeaf[d.Values[last]] = append(byLeaf[d.Values[last]], i)
	}
	placed := make([]int32, len(a.Domains))
	nodesOf := make([][]string, len(a.Domains))
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		d, ok := a.domainOf(node.Labels, byLeaf[node.Labels[a.Levels[last]]])
		if !ok {
			continue
		}
		nodesOf[d] = append(nodesOf[d], node.Name)
		if !inGang {
			continue
		}
		for _, pi := range ni.GetPods() {
			if p := pi.GetPod(); p.UID != pod.UID && counts(p, key) {
				placed[d]++
			}
		}
	}
	open := sets.New[string]()
	for d := range a.Domains {
		if placed[d] < a.Domains[d].Count {
			open.Insert(nodesOf[d]...)
		}
	}
	if open.Len() == 0 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("the %d domains of podset %s's topology assignment hold their %d pods, or have no nodes",
				len(a.Domains), key, total(a)))
	}
	return &fwk.PreFilterResult{NodeNames: open}, nil
}

// PreFilterExtensions returns nil: the nodes a pod may go to do not depend
// on the pods that preemption would remove, only on its own podset's.
func (t *Topology) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// domainOf is the one of the candidate domains whose values labels has,
// and false when none.
func (a *assignment) domainOf(labels map[string]string, candidates []int) (int, bool) {
	for _, d := range candidates {
		match := true
		for i, level := range a.Levels[:len(a.Levels)-1] {
			if labels[level] != a.Domains[d].Values[i] {
				match = false
				break
			}
		}
		if match {
			return d, true
		}
	}
	return 0, false
}

func parse(raw string) (*assignment, error) {
	a := &assignment{}
	if err := json.Unmarshal([]byte(raw), a); err != nil {
		return nil, err
	}
	if len(a.Levels) == 0 {
		return nil, fmt.Errorf("no levels")
	}
	for i, d := range a.Domains {
		if len(d.Values) != len(a.Levels) {
			return nil, fmt.Errorf("domain %d has %d values for %d levels", i, len(d.Values), len(a.Levels))
		}
	}
	return a, nil
}

// counts reports whether p is a pod of the podset key that takes its
// domain's room: one that has not finished.
func counts(p *corev1.Pod, key podset.Key) bool {
	if k, ok := podset.KeyOf(p); !ok || k != key {
		return false
	}
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func total(a *assignment) int32 {
	var n int32
	for _, d := range a.Domains {
		n += d.Count
	}
	return n
}
