package topology

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
	domainOf := make(map[string]int, len(a.Domains))
	for i, d := range a.Domains {
		domainOf[strings.Join(d.Values, "\x00")] = i
	}
	placed := make([]int32, len(a.Domains))
	nodesOf := make([][]string, len(a.Domains))
	values := make([]string, len(a.Levels))
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		for i, level := range a.Levels {
			values[i] = node.Labels[level]
		}
		d, ok := domainOf[strings.Join(values, "\x00")]
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
