package gang

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

// Name is the name of the plugin in the scheduler configuration.
const Name = "BerthGang"

// Gang holds the pods of a Berth podset at Permit until all of them have a
// node, then allows them together. See the package documentation.
type Gang struct {
	handle  fwk.Handle
	pods    corelisters.PodLister
	timeout time.Duration
}

var (
	_ fwk.PermitPlugin  = (*Gang)(nil)
	_ fwk.ReservePlugin = (*Gang)(nil)
)

// New builds the plugin from its arguments (see Args) and the framework handle.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	timeout, err := decodeTimeout(obj)
	if err != nil {
		return nil, err
	}
	return newGang(h, timeout), nil
}

// newGang asks for the pod lister here, before the scheduler starts its
// informers, so that the pod informer is registered and synced with them.
func newGang(h fwk.Handle, timeout time.Duration) *Gang {
	return &Gang{
		handle:  h,
		pods:    h.SharedInformerFactory().Core().V1().Pods().Lister(),
		timeout: timeout,
	}
}

// Name returns the name of the plugin.
func (g *Gang) Name() string { return Name }

// Permit returns Success for pods outside any gang and for the pod that
// completes its gang, after allowing the members waiting for it. Any other
// member of a gang gets Wait with the plugin's timeout. It returns Error
// only when the pod lister fails.
func (g *Gang) Permit(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	key, ok := podset.KeyOf(pod)
	if !ok {
		return nil, 0
	}
	members, err := g.members(key)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("listing the pods of podset %s: %w", key, err)), 0
	}
	p := countProgress(pod, members, g.waitingUIDs(key))
	logger := klog.FromContext(ctx)
	if !p.complete() {
		logger.V(4).Info("Gang incomplete, waiting at permit", "pod", klog.KObj(pod), "node", nodeName,
			"gang", key.String(), "placed", p.Placed, "expected", p.Expected)
		msg := fmt.Sprintf("%d of %d pods of podset %s have a node; waiting up to %v for the rest",
			p.Placed, p.Expected, key, g.timeout)
		return fwk.NewStatus(fwk.Wait, msg), g.timeout
	}
	allowed := g.allowWaiting(key)
	logger.V(3).Info("Gang complete, allowing its pods", "pod", klog.KObj(pod), "gang", key.String(),
		"expected", p.Expected, "allowedWaiting", allowed)
	return nil, 0
}

// Reserve does nothing: the plugin is a ReservePlugin only for Unreserve.
func (g *Gang) Reserve(context.Context, fwk.CycleState, *corev1.Pod, string) *fwk.Status {
	return nil
}

// Unreserve runs when a pod fails after Reserve, including when it is
// rejected at Permit because its gang timed out. It rejects the other
// waiting members of the gang so that none of them keeps its node while the
// gang is only partly placed.
func (g *Gang) Unreserve(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	key, ok := podset.KeyOf(pod)
	if !ok {
		return
	}
	msg := fmt.Sprintf("pod %s of podset %s could not be placed, so the whole podset is rejected",
		klog.KObj(pod), key)
	rejected := 0
	g.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		other := wp.GetPod()
		if other.UID == pod.UID || !inGang(other, key) {
			return
		}
		if wp.Reject(Name, msg) {
			rejected++
		}
	})
	if rejected > 0 {
		klog.FromContext(ctx).V(3).Info("Gang failed, rejected its waiting pods", "pod", klog.KObj(pod),
			"gang", key.String(), "rejected", rejected)
	}
}

// members lists the pods carrying the gang's labels in its namespace.
func (g *Gang) members(key podset.Key) ([]*corev1.Pod, error) {
	selector := labels.SelectorFromSet(labels.Set{
		podset.WorkloadLabel: key.Workload,
		podset.PodSetLabel:   key.PodSet,
	})
	return g.pods.Pods(key.Namespace).List(selector)
}

// waitingUIDs returns the members of the gang that wait at Permit.
func (g *Gang) waitingUIDs(key podset.Key) sets.Set[types.UID] {
	uids := sets.New[types.UID]()
	g.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if pod := wp.GetPod(); inGang(pod, key) {
			uids.Insert(pod.UID)
		}
	})
	return uids
}

// allowWaiting lets the members of the gang waiting at Permit go on to
// binding, and returns how many there were.
func (g *Gang) allowWaiting(key podset.Key) int {
	allowed := 0
	g.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if inGang(wp.GetPod(), key) {
			wp.Allow(Name)
			allowed++
		}
	})
	return allowed
}

func inGang(pod *corev1.Pod, key podset.Key) bool {
	k, ok := podset.KeyOf(pod)
	return ok && k == key
}
