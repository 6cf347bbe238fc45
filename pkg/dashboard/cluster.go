package dashboard

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Cluster is what a reader of the cluster sees of it, in one go: the
// queues, flavors and cohorts, and the Workloads of one namespace or of
// all of them. kubectl berth's commands read it with the user's
// credentials; the controller serves the dashboard from its own cache.
type Cluster struct {
	Flavors       []berthv1alpha1.ResourceFlavor
	Cohorts       []berthv1alpha1.Cohort
	ClusterQueues map[string]*berthv1alpha1.ClusterQueue
	// LocalQueues by "namespace/name".
	LocalQueues map[string]*berthv1alpha1.LocalQueue
	Workloads   []*berthv1alpha1.Workload
	// Namespaces is nil when the reader may not list them: namespace
	// selectors are then not checked.
	Namespaces map[string]*corev1.Namespace
	// AllNamespaces is set when the Workloads and LocalQueues of every
	// namespace were read: positions in ClusterQueues are exact only then.
	AllNamespaces bool
	// QueuesUnknown is set when the reader may not read ClusterQueues,
	// flavors and cohorts (berth-batch-user reads only its namespace's
	// LocalQueues and Workloads): positions in LocalQueues are still exact.
	QueuesUnknown bool
	Now           time.Time
	// ordered holds positions once computed: the dashboard renders many
	// pages of one cluster.
	ordered struct {
		once sync.Once
		all  map[string]Position
	}
	// histories holds the Workloads' lives by ClusterQueue once read,
	// for the dashboard's charts.
	histories struct {
		once sync.Once
		byCQ map[string][]life
	}
}

// Load reads the cluster through c. With namespace "" it reads every
// namespace's Workloads and LocalQueues; when the user may not, it falls
// back to ns, the namespace of the command, if it is not empty.
func Load(ctx context.Context, c client.Reader, namespace, ns string) (*Cluster, error) {
	cl := &Cluster{ClusterQueues: map[string]*berthv1alpha1.ClusterQueue{}, LocalQueues: map[string]*berthv1alpha1.LocalQueue{}, Now: time.Now()}
	cqs := &berthv1alpha1.ClusterQueueList{}
	flavors := &berthv1alpha1.ResourceFlavorList{}
	cohorts := &berthv1alpha1.CohortList{}
	for _, l := range []client.ObjectList{cqs, flavors, cohorts} {
		if err := c.List(ctx, l); apierrors.IsForbidden(err) {
			cl.QueuesUnknown = true
		} else if err != nil {
			return nil, ReadError(err)
		}
	}
	for i := range cqs.Items {
		cl.ClusterQueues[cqs.Items[i].Name] = &cqs.Items[i]
	}
	cl.Flavors, cl.Cohorts = flavors.Items, cohorts.Items
	scope := namespace
	lqs, wls := &berthv1alpha1.LocalQueueList{}, &berthv1alpha1.WorkloadList{}
	err := ListIn(ctx, c, scope, lqs, wls)
	if scope == "" && apierrors.IsForbidden(err) && ns != "" {
		scope = ns
		err = ListIn(ctx, c, scope, lqs, wls)
	}
	if err != nil {
		return nil, ReadError(err)
	}
	cl.AllNamespaces = scope == ""
	for i := range lqs.Items {
		cl.LocalQueues[lqs.Items[i].Namespace+"/"+lqs.Items[i].Name] = &lqs.Items[i]
	}
	for i := range wls.Items {
		cl.Workloads = append(cl.Workloads, &wls.Items[i])
	}
	nsList := &corev1.NamespaceList{}
	if err := c.List(ctx, nsList); err == nil {
		cl.Namespaces = map[string]*corev1.Namespace{}
		for i := range nsList.Items {
			cl.Namespaces[nsList.Items[i].Name] = &nsList.Items[i]
		}
	}
	return cl, nil
}

// ListIn lists each of lists in namespace ("" for all).
func ListIn(ctx context.Context, c client.Reader, namespace string, lists ...client.ObjectList) error {
	for _, l := range lists {
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return err
		}
	}
	return nil
}

// ReadError says in one line what the user may not read.
func ReadError(err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("not allowed: %w", err)
	}
	return err
}

// Placement is where a workload that waits is queued, or why it is not.
type Placement struct {
	ClusterQueue string
	// NotQueued says why the workload is not in any queue; it is not
	// tried until that changes.
	NotQueued string
}

// PlacementOf mirrors the controller's own checks of a pending workload
// before it queues it: active, not backing off, its LocalQueue and
// ClusterQueue there and not stopped, its namespace selected.
func (cl *Cluster) PlacementOf(wl *berthv1alpha1.Workload) Placement {
	switch {
	case !workload.IsActive(wl):
		return Placement{NotQueued: workload.DeactivatedMessage}
	case wl.Spec.QueueName == "":
		return Placement{NotQueued: "The workload has no spec.queueName"}
	}
	if at, waiting := workload.WaitingForBackoff(wl, cl.Now); waiting {
		return Placement{NotQueued: "Waiting until " + at.UTC().Format(time.RFC3339) + " before it is queued again (backoff)"}
	}
	lq := cl.LocalQueues[workload.LocalQueueKey(wl)]
	if lq == nil {
		return Placement{NotQueued: fmt.Sprintf("LocalQueue %s does not exist in namespace %s", wl.Spec.QueueName, wl.Namespace)}
	}
	if lq.Spec.StopPolicy != "" && lq.Spec.StopPolicy != berthv1alpha1.None {
		return Placement{NotQueued: fmt.Sprintf("LocalQueue %s is stopped (stopPolicy %s)", lq.Name, lq.Spec.StopPolicy)}
	}
	if cl.QueuesUnknown {
		return Placement{ClusterQueue: string(lq.Spec.ClusterQueue)}
	}
	cq := cl.ClusterQueues[string(lq.Spec.ClusterQueue)]
	if cq == nil {
		return Placement{NotQueued: fmt.Sprintf("ClusterQueue %s of LocalQueue %s does not exist", lq.Spec.ClusterQueue, lq.Name)}
	}
	if ns := cl.Namespaces[wl.Namespace]; ns != nil && cl.Namespaces != nil {
		if sel, err := metav1.LabelSelectorAsSelector(cq.Spec.NamespaceSelector); cq.Spec.NamespaceSelector == nil || err != nil || !sel.Matches(labels.Set(ns.Labels)) {
			return Placement{NotQueued: fmt.Sprintf("Namespace %s does not match the namespaceSelector of ClusterQueue %s", ns.Name, cq.Name)}
		}
	}
	return Placement{ClusterQueue: cq.Name}
}

// Position is a pending workload's place in its queues, from 1.
type Position struct {
	Workload     *berthv1alpha1.Workload
	ClusterQueue string
	InLocalQueue int
	// InClusterQueue is 0 when the reader may not read every namespace's
	// Workloads, and so cannot know it.
	InClusterQueue int
}

// Positions orders the queued workloads of every ClusterQueue as the
// controller's queues do (queue.Sort) and numbers them.
func (cl *Cluster) Positions() map[string]Position {
	cl.ordered.once.Do(func() { cl.ordered.all = cl.order() })
	return cl.ordered.all
}

func (cl *Cluster) order() map[string]Position {
	byCQ := map[string][]*workload.Info{}
	for _, wl := range cl.Workloads {
		if workload.HasQuotaReservation(wl) || workload.IsFinished(wl) {
			continue
		}
		if p := cl.PlacementOf(wl); p.NotQueued == "" {
			byCQ[p.ClusterQueue] = append(byCQ[p.ClusterQueue], workload.NewInfo(wl))
		}
	}
	out := map[string]Position{}
	for cq, infos := range byCQ {
		cl.sort(cq, infos)
		inLQ := map[string]int{}
		for i, info := range infos {
			lq := workload.LocalQueueKey(info.Obj)
			inLQ[lq]++
			p := Position{Workload: info.Obj, ClusterQueue: cq, InLocalQueue: inLQ[lq]}
			if cl.AllNamespaces {
				p.InClusterQueue = i + 1
			}
			out[info.Key] = p
		}
	}
	return out
}

// sort orders the pending workloads of ClusterQueue cq as the controller
// does: with admission fair sharing, by the weighted share of recent usage
// that their LocalQueue's status shows first.
func (cl *Cluster) sort(cq string, infos []*workload.Info) {
	obj := cl.ClusterQueues[cq]
	if obj == nil || obj.Spec.AdmissionScope == nil || obj.Spec.AdmissionScope.AdmissionMode != berthv1alpha1.UsageBasedAdmissionFairSharing {
		queue.Sort(infos)
		return
	}
	queue.SortByShare(infos, func(key string) float64 {
		if lq := cl.LocalQueues[key]; lq != nil && lq.Status.FairSharing != nil {
			return float64(lq.Status.FairSharing.WeightedShare)
		}
		return 0
	})
}

// WaitingMessage is why a pending workload waits: its own condition, or
// why it is not queued at all.
func WaitingMessage(wl *berthv1alpha1.Workload) string {
	if c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
		return c.Message
	}
	return ""
}

// QueueNameOf is the LocalQueue the Workload ns/name was submitted to.
func (cl *Cluster) QueueNameOf(ns, name string) string {
	for _, wl := range cl.Workloads {
		if wl.Namespace == ns && wl.Name == name {
			return string(wl.Spec.QueueName)
		}
	}
	return ""
}
