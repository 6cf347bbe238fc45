package kubectlberth

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

// cluster is what the commands read of the live cluster, in one go: the
// queues, flavors, cohorts and priority classes, and the Workloads of one
// namespace or of all of them.
type cluster struct {
	flavors       []berthv1alpha1.ResourceFlavor
	cohorts       []berthv1alpha1.Cohort
	clusterQueues map[string]*berthv1alpha1.ClusterQueue
	// localQueues by "namespace/name".
	localQueues map[string]*berthv1alpha1.LocalQueue
	workloads   []*berthv1alpha1.Workload
	// namespaces is nil when the user may not list them: namespace
	// selectors are then not checked.
	namespaces map[string]*corev1.Namespace
	// allNamespaces is set when the Workloads and LocalQueues of every
	// namespace were read: positions in ClusterQueues are exact only then.
	allNamespaces bool
	// queuesUnknown is set when the user may not read ClusterQueues,
	// flavors and cohorts (berth-batch-user reads only its namespace's
	// LocalQueues and Workloads): positions in LocalQueues are still exact.
	queuesUnknown bool
	now           time.Time
	// ordered holds positions once computed: the dashboard renders many
	// pages of one cluster.
	ordered struct {
		once sync.Once
		all  map[string]position
	}
	// histories holds the Workloads' lives by ClusterQueue once read,
	// for the dashboard's charts.
	histories struct {
		once sync.Once
		byCQ map[string][]life
	}
}

// load reads the cluster through c. With namespace "" it reads every
// namespace's Workloads and LocalQueues; when the user may not, it falls
// back to ns, the namespace of the command, if it is not empty.
func load(ctx context.Context, c client.Reader, namespace, ns string) (*cluster, error) {
	cl := &cluster{clusterQueues: map[string]*berthv1alpha1.ClusterQueue{}, localQueues: map[string]*berthv1alpha1.LocalQueue{}, now: time.Now()}
	cqs := &berthv1alpha1.ClusterQueueList{}
	flavors := &berthv1alpha1.ResourceFlavorList{}
	cohorts := &berthv1alpha1.CohortList{}
	for _, l := range []client.ObjectList{cqs, flavors, cohorts} {
		if err := c.List(ctx, l); apierrors.IsForbidden(err) {
			cl.queuesUnknown = true
		} else if err != nil {
			return nil, readError(err)
		}
	}
	for i := range cqs.Items {
		cl.clusterQueues[cqs.Items[i].Name] = &cqs.Items[i]
	}
	cl.flavors, cl.cohorts = flavors.Items, cohorts.Items
	scope := namespace
	lqs, wls := &berthv1alpha1.LocalQueueList{}, &berthv1alpha1.WorkloadList{}
	err := listIn(ctx, c, scope, lqs, wls)
	if scope == "" && apierrors.IsForbidden(err) && ns != "" {
		scope = ns
		err = listIn(ctx, c, scope, lqs, wls)
	}
	if err != nil {
		return nil, readError(err)
	}
	cl.allNamespaces = scope == ""
	for i := range lqs.Items {
		cl.localQueues[lqs.Items[i].Namespace+"/"+lqs.Items[i].Name] = &lqs.Items[i]
	}
	for i := range wls.Items {
		cl.workloads = append(cl.workloads, &wls.Items[i])
	}
	nsList := &corev1.NamespaceList{}
	if err := c.List(ctx, nsList); err == nil {
		cl.namespaces = map[string]*corev1.Namespace{}
		for i := range nsList.Items {
			cl.namespaces[nsList.Items[i].Name] = &nsList.Items[i]
		}
	}
	return cl, nil
}

func listIn(ctx context.Context, c client.Reader, namespace string, lists ...client.ObjectList) error {
	for _, l := range lists {
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return err
		}
	}
	return nil
}

// readError says in one line what the user may not read.
func readError(err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("not allowed: %w", err)
	}
	return err
}

// placement is where a workload that waits is queued, or why it is not.
type placement struct {
	clusterQueue string
	// notQueued says why the workload is not in any queue; it is not
	// tried until that changes.
	notQueued string
}

// placementOf mirrors the controller's own checks of a pending workload
// before it queues it: active, not backing off, its LocalQueue and
// ClusterQueue there and not stopped, its namespace selected.
func (cl *cluster) placementOf(wl *berthv1alpha1.Workload) placement {
	switch {
	case !workload.IsActive(wl):
		return placement{notQueued: workload.DeactivatedMessage}
	case wl.Spec.QueueName == "":
		return placement{notQueued: "The workload has no spec.queueName"}
	}
	if at, waiting := workload.WaitingForBackoff(wl, cl.now); waiting {
		return placement{notQueued: "Waiting until " + at.UTC().Format(time.RFC3339) + " before it is queued again (backoff)"}
	}
	lq := cl.localQueues[workload.LocalQueueKey(wl)]
	if lq == nil {
		return placement{notQueued: fmt.Sprintf("LocalQueue %s does not exist in namespace %s", wl.Spec.QueueName, wl.Namespace)}
	}
	if lq.Spec.StopPolicy != "" && lq.Spec.StopPolicy != berthv1alpha1.None {
		return placement{notQueued: fmt.Sprintf("LocalQueue %s is stopped (stopPolicy %s)", lq.Name, lq.Spec.StopPolicy)}
	}
	if cl.queuesUnknown {
		return placement{clusterQueue: string(lq.Spec.ClusterQueue)}
	}
	cq := cl.clusterQueues[string(lq.Spec.ClusterQueue)]
	if cq == nil {
		return placement{notQueued: fmt.Sprintf("ClusterQueue %s of LocalQueue %s does not exist", lq.Spec.ClusterQueue, lq.Name)}
	}
	if ns := cl.namespaces[wl.Namespace]; ns != nil && cl.namespaces != nil {
		if sel, err := metav1.LabelSelectorAsSelector(cq.Spec.NamespaceSelector); cq.Spec.NamespaceSelector == nil || err != nil || !sel.Matches(labels.Set(ns.Labels)) {
			return placement{notQueued: fmt.Sprintf("Namespace %s does not match the namespaceSelector of ClusterQueue %s", ns.Name, cq.Name)}
		}
	}
	return placement{clusterQueue: cq.Name}
}

// position is a pending workload's place in its queues, from 1.
type position struct {
	wl           *berthv1alpha1.Workload
	clusterQueue string
	inLocalQueue int
	// inClusterQueue is 0 when the user may not read every namespace's
	// Workloads, and so cannot know it.
	inClusterQueue int
}

// positions orders the queued workloads of every ClusterQueue as the
// controller's queues do (queue.Sort) and numbers them.
func (cl *cluster) positions() map[string]position {
	cl.ordered.once.Do(func() { cl.ordered.all = cl.order() })
	return cl.ordered.all
}

func (cl *cluster) order() map[string]position {
	byCQ := map[string][]*workload.Info{}
	for _, wl := range cl.workloads {
		if workload.HasQuotaReservation(wl) || workload.IsFinished(wl) {
			continue
		}
		if p := cl.placementOf(wl); p.notQueued == "" {
			byCQ[p.clusterQueue] = append(byCQ[p.clusterQueue], workload.NewInfo(wl))
		}
	}
	out := map[string]position{}
	for cq, infos := range byCQ {
		cl.sort(cq, infos)
		inLQ := map[string]int{}
		for i, info := range infos {
			lq := workload.LocalQueueKey(info.Obj)
			inLQ[lq]++
			p := position{wl: info.Obj, clusterQueue: cq, inLocalQueue: inLQ[lq]}
			if cl.allNamespaces {
				p.inClusterQueue = i + 1
			}
			out[info.Key] = p
		}
	}
	return out
}

// sort orders the pending workloads of ClusterQueue cq as the controller
// does: with admission fair sharing, by the weighted share of recent usage
// that their LocalQueue's status shows first.
func (cl *cluster) sort(cq string, infos []*workload.Info) {
	obj := cl.clusterQueues[cq]
	if obj == nil || obj.Spec.AdmissionScope == nil || obj.Spec.AdmissionScope.AdmissionMode != berthv1alpha1.UsageBasedAdmissionFairSharing {
		queue.Sort(infos)
		return
	}
	queue.SortByShare(infos, func(key string) float64 {
		if lq := cl.localQueues[key]; lq != nil && lq.Status.FairSharing != nil {
			return float64(lq.Status.FairSharing.WeightedShare)
		}
		return 0
	})
}

// waitingMessage is why a pending workload waits: its own condition, or
// why it is not queued at all.
func waitingMessage(wl *berthv1alpha1.Workload) string {
	if c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
		return c.Message
	}
	return ""
}

// queueNameOf is the LocalQueue the Workload ns/name was submitted to.
func (cl *cluster) queueNameOf(ns, name string) string {
	for _, wl := range cl.workloads {
		if wl.Namespace == ns && wl.Name == name {
			return string(wl.Spec.QueueName)
		}
	}
	return ""
}
