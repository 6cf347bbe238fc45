package gang

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	"github.com/berth-dev/berth/cmd/berth-scheduler/internal/podset"
)

// Outcomes of a pod that waited at Permit.
const (
	waiting  = "waiting"
	allowed  = "allowed"
	rejected = "rejected"
)

// member makes a pod of podset ps of Workload wl in namespace ns; the pod's
// name is also its UID.
func member(name, ns, wl, ps string) *st.PodWrapper {
	return st.MakePod().Name(name).Namespace(ns).UID(name).
		Label(podset.WorkloadLabel, wl).Label(podset.PodSetLabel, ps)
}

func worker(name string) *st.PodWrapper { return member(name, "ns", "train", "workers") }

func TestPermit(t *testing.T) {
	cases := map[string]struct {
		pods    []*corev1.Pod
		permits []string
		// gap is how long to wait between two Permit calls, so that the
		// first waiting pod times out first.
		gap             time.Duration
		wantCodes       []fwk.Code
		wantAfterPermit map[string]string
		wantFinal       map[string]string
	}{
		"unlabeled pod passes": {
			pods:      []*corev1.Pod{st.MakePod().Name("plain").Namespace("ns").UID("plain").Obj()},
			permits:   []string{"plain"},
			wantCodes: []fwk.Code{fwk.Success},
		},
		"pod with only the workload label passes": {
			pods: []*corev1.Pod{
				st.MakePod().Name("half").Namespace("ns").UID("half").Label(podset.WorkloadLabel, "train").Obj(),
			},
			permits:   []string{"half"},
			wantCodes: []fwk.Code{fwk.Success},
		},
		"pod of an incomplete gang waits, then times out": {
			pods:            []*corev1.Pod{worker("a").Obj(), worker("b").Obj(), worker("c").Obj()},
			permits:         []string{"a"},
			wantCodes:       []fwk.Code{fwk.Wait},
			wantAfterPermit: map[string]string{"a": waiting},
			wantFinal:       map[string]string{"a": rejected},
		},
		"last pod completes the gang and all are allowed": {
			pods:            []*corev1.Pod{worker("a").Obj(), worker("b").Obj(), worker("c").Obj()},
			permits:         []string{"a", "b", "c"},
			wantCodes:       []fwk.Code{fwk.Wait, fwk.Wait, fwk.Success},
			wantAfterPermit: map[string]string{"a": allowed, "b": allowed},
			wantFinal:       map[string]string{"a": allowed, "b": allowed},
		},
		"timeout rejects every waiting pod of the gang": {
			pods:            []*corev1.Pod{worker("a").Obj(), worker("b").Obj(), worker("c").Obj()},
			permits:         []string{"a", "b"},
			gap:             100 * time.Millisecond,
			wantCodes:       []fwk.Code{fwk.Wait, fwk.Wait},
			wantAfterPermit: map[string]string{"a": waiting, "b": waiting},
			wantFinal:       map[string]string{"a": rejected, "b": rejected},
		},
		"bound members count as placed": {
			pods:      []*corev1.Pod{worker("a").Node("n1").Obj(), worker("b").Node("n2").Obj(), worker("c").Obj()},
			permits:   []string{"c"},
			wantCodes: []fwk.Code{fwk.Success},
		},
		"finished and deleting pods are not waited for": {
			pods: []*corev1.Pod{
				worker("a").Obj(),
				worker("done").Phase(corev1.PodSucceeded).Obj(),
				worker("failed").Phase(corev1.PodFailed).Obj(),
				worker("leaving").Terminating().Obj(),
			},
			permits:   []string{"a"},
			wantCodes: []fwk.Code{fwk.Success},
		},
		"podsets of one workload are separate gangs": {
			pods: []*corev1.Pod{
				worker("a").Obj(), worker("b").Obj(),
				member("l1", "ns", "train", "launcher").Obj(), member("l2", "ns", "train", "launcher").Obj(),
			},
			permits:         []string{"a", "l1", "l2"},
			wantCodes:       []fwk.Code{fwk.Wait, fwk.Wait, fwk.Success},
			wantAfterPermit: map[string]string{"a": waiting, "l1": allowed},
			wantFinal:       map[string]string{"a": rejected, "l1": allowed},
		},
		"the same labels in another namespace are another gang": {
			pods:      []*corev1.Pod{worker("a").Obj(), member("x", "other", "train", "workers").Obj()},
			permits:   []string{"x"},
			wantCodes: []fwk.Code{fwk.Success},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			fw := newFramework(t, 200*time.Millisecond, tc.pods...)
			byName := map[string]*corev1.Pod{}
			for _, p := range tc.pods {
				byName[p.Name] = p
			}

			var gotCodes []fwk.Code
			var waited []*corev1.Pod
			for i, name := range tc.permits {
				if i > 0 {
					time.Sleep(tc.gap)
				}
				pod := byName[name]
				status := permit(ctx, fw, pod)
				gotCodes = append(gotCodes, status.Code())
				if status.IsWait() {
					waited = append(waited, pod)
				}
			}
			if diff := cmp.Diff(tc.wantCodes, gotCodes); diff != "" {
				t.Errorf("Permit codes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAfterPermit, afterPermit(fw, waited)); diff != "" {
				t.Errorf("Waiting pods after the Permit calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFinal, finish(ctx, fw, waited)); diff != "" {
				t.Errorf("Outcome of the waiting pods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnreserveRejectsWaitingMembers shows that a member failing for any
// reason (here Unreserve of a member that never waited) releases the nodes
// its gang holds, and leaves other gangs alone.
func TestUnreserveRejectsWaitingMembers(t *testing.T) {
	ctx := t.Context()
	a, b, c := worker("a").Obj(), worker("b").Obj(), worker("c").Obj()
	other := member("o", "ns", "eval", "workers").Obj()
	otherPeer := member("o2", "ns", "eval", "workers").Obj()
	fw := newFramework(t, time.Minute, a, b, c, other, otherPeer)
	for _, pod := range []*corev1.Pod{a, b, other} {
		if status := permit(ctx, fw, pod); !status.IsWait() {
			t.Fatalf("Permit of %s: got %v, want Wait", pod.Name, status)
		}
	}

	fw.RunReservePluginsUnreserve(ctx, framework.NewCycleState(), c, "node")

	got := afterPermit(fw, []*corev1.Pod{other})
	got["a"] = outcome(fw.WaitOnPermit(ctx, a))
	got["b"] = outcome(fw.WaitOnPermit(ctx, b))
	want := map[string]string{"a": rejected, "b": rejected, "o": waiting}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Outcome after Unreserve of c (-want +got):\n%s", diff)
	}
	fw.RejectWaitingPod(other.UID)
}

func TestDecodeTimeout(t *testing.T) {
	cases := map[string]struct {
		args        runtime.Object
		wantTimeout time.Duration
		wantErr     bool
	}{
		"no args":        {wantTimeout: DefaultTimeout},
		"empty args":     {args: &runtime.Unknown{Raw: []byte(`{}`)}, wantTimeout: DefaultTimeout},
		"timeoutSeconds": {args: &runtime.Unknown{Raw: []byte(`{"timeoutSeconds": 90}`)}, wantTimeout: 90 * time.Second},
		"zero":           {args: &runtime.Unknown{Raw: []byte(`{"timeoutSeconds": 0}`)}, wantErr: true},
		"not JSON":       {args: &runtime.Unknown{Raw: []byte(`{`)}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeTimeout(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("decodeTimeout() error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantTimeout, got); diff != "" {
				t.Errorf("decodeTimeout() (-want +got):\n%s", diff)
			}
		})
	}
}

// newFramework builds a real scheduling framework with the plugin at Permit
// and Reserve, over a pod informer holding pods.
func newFramework(t *testing.T, timeout time.Duration, pods ...*corev1.Pod) framework.Framework {
	t.Helper()
	// The framework records Permit latencies in the scheduler's metrics,
	// which must be registered first (Register is idempotent).
	metrics.Register()
	factory := informers.NewSharedInformerFactory(clientsetfake.NewClientset(), 0)
	store := factory.Core().V1().Pods().Informer().GetStore()
	for _, p := range pods {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	newPlugin := func(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return newGang(h, timeout), nil
	}
	fw, err := tf.NewFramework(t.Context(), []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, newPlugin, "Permit", "Reserve"),
	}, "berth-scheduler",
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
	)
	if err != nil {
		t.Fatal(err)
	}
	return fw
}

// permit does what the scheduler's scheduling cycle does at Permit: run the
// plugins, and make the pod a waiting pod when they say Wait.
func permit(ctx context.Context, fw framework.Framework, pod *corev1.Pod) *fwk.Status {
	waitTime, status := fw.RunPermitPlugins(ctx, framework.NewCycleState(), pod, "node")
	if status.IsWait() {
		fw.AddWaitingPod(pod, waitTime)
	}
	return status
}

// afterPermit says, without blocking, whether each pod that got Wait is
// still waiting for the plugin or has been allowed by it.
func afterPermit(fw framework.Framework, pods []*corev1.Pod) map[string]string {
	if len(pods) == 0 {
		return nil
	}
	got := map[string]string{}
	for _, pod := range pods {
		got[pod.Name] = allowed
		if wp := fw.GetWaitingPod(pod.UID); wp != nil && len(wp.GetPendingPlugins()) > 0 {
			got[pod.Name] = waiting
		}
	}
	return got
}

// finish does what the scheduler's binding cycle does with each waiting pod:
// wait on Permit, and run Unreserve when the pod is rejected.
func finish(ctx context.Context, fw framework.Framework, pods []*corev1.Pod) map[string]string {
	if len(pods) == 0 {
		return nil
	}
	got := map[string]string{}
	for _, pod := range pods {
		status := fw.WaitOnPermit(ctx, pod)
		got[pod.Name] = outcome(status)
		if !status.IsSuccess() {
			fw.RunReservePluginsUnreserve(ctx, framework.NewCycleState(), pod, "node")
		}
	}
	return got
}

func outcome(status *fwk.Status) string {
	if status.IsSuccess() {
		return allowed
	}
	return rejected
}
