package gpupacking

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

// Name is the name of the plugin in the scheduler configuration.
const Name = "BerthGPUPacking"

// GPUResource is the extended resource the plugin packs.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// stateKey is where PreScore leaves the pod's request for Score.
const stateKey fwk.StateKey = Name

// GPUPacking scores nodes to pack a workload's GPU pods; see the package
// documentation.
type GPUPacking struct{}

var (
	_ fwk.PreScorePlugin = (*GPUPacking)(nil)
	_ fwk.ScorePlugin    = (*GPUPacking)(nil)
)

// New builds the plugin. It takes no arguments.
func New(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return &GPUPacking{}, nil
}

// Name returns the name of the plugin.
func (g *GPUPacking) Name() string { return Name }

// preScoreState is the per-cycle scratch data of one pod.
type preScoreState struct {
	gpus      int64
	namespace string
	workload  string
}

// Clone returns the state itself: it is never modified after PreScore.
func (s *preScoreState) Clone() fwk.StateData { return s }

// PreScore computes the pod's GPU request once per cycle. It returns Skip
// for pods that request no GPU, so that Score does not run for them.
func (g *GPUPacking) PreScore(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s := podState(pod)
	if s.gpus <= 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	state.Write(stateKey, s)
	return nil
}

// Score returns the node's score for the pod (see the package documentation).
// It returns Error only if PreScore did not run.
func (g *GPUPacking) Score(_ context.Context, state fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	data, err := state.Read(stateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("reading %s state: %w", Name, err))
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return 0, fwk.AsStatus(fmt.Errorf("%s state has type %T", Name, data))
	}
	return score(s.gpus, nodeOf(nodeInfo, s)), nil
}

// ScoreExtensions returns nil: scores are already within [0, 100].
func (g *GPUPacking) ScoreExtensions() fwk.ScoreExtensions { return nil }

// podState reads what Score needs from the pod.
func podState(pod *corev1.Pod) *preScoreState {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	s := &preScoreState{namespace: pod.Namespace}
	if q, ok := requests[GPUResource]; ok {
		s.gpus = q.Value()
	}
	if key, ok := podset.KeyOf(pod); ok {
		s.workload = key.Workload
	}
	return s
}

// nodeOf reads what Score needs from the snapshot's NodeInfo.
func nodeOf(nodeInfo fwk.NodeInfo, s *preScoreState) gpuNode {
	n := gpuNode{
		Allocatable: nodeInfo.GetAllocatable().GetScalarResources()[GPUResource],
		Requested:   nodeInfo.GetRequested().GetScalarResources()[GPUResource],
	}
	if s.workload == "" {
		return n
	}
	for _, pi := range nodeInfo.GetPods() {
		if podset.SameWorkload(pi.GetPod(), s.namespace, s.workload) {
			n.RunsWorkload = true
			break
		}
	}
	return n
}
