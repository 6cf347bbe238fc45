package kubectlberth

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// The states of kubectl berth why.
const (
	StatePending  = "Pending"
	StateAdmitted = "Admitted"
	StateFinished = "Finished"
	StateEvicted  = "Evicted"
	StateInactive = "Inactive"
	// StateQuotaReserved is a workload holding quota that waits on its
	// admission checks.
	StateQuotaReserved = "QuotaReserved"
)

// Why is the output of kubectl berth why.
type Why struct {
	Workload               string  `json:"workload"`
	State                  string  `json:"state"`
	Message                string  `json:"message"`
	PositionInLocalQueue   *int    `json:"positionInLocalQueue"`
	PositionInClusterQueue *int    `json:"positionInClusterQueue"`
	Ahead                  []Ahead `json:"ahead"`
	// AheadElsewhere counts the workloads ahead of it from LocalQueues
	// whose workloads the user may not read (the visibility API tells
	// how many, not which).
	AheadElsewhere int `json:"aheadElsewhere,omitempty"`
	// Slice, for an elastic job that grew, is where the slice of the pods
	// it added is and why it waits.
	Slice *Why `json:"slice,omitempty"`
	// Topology is, per podset admitted to a flavor with a Topology, its
	// domains and their pod counts.
	Topology map[string]string `json:"topology,omitempty"`
}

// Ahead is a workload tried before the one asked about.
type Ahead struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Priority  int32  `json:"priority"`
	// Requests are its requests per resource, all podsets together.
	Requests map[string]string `json:"requests,omitempty"`
}

func (o *options) whyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "why (job|jobset|rayjob|raycluster|trainjob|pod|workload)/NAME",
		Short: "Where a job's Workload is, and why it waits, in numbers",
		Example: `  kubectl berth why job/train -n team-a
  kubectl berth why workload/job-train-3f2a1 -n team-a -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.prepare()
			if err != nil {
				return err
			}
			name, err := workloadNameOf(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			cl, err := dashboard.Load(cmd.Context(), c, "", ns)
			if err != nil {
				return err
			}
			why, err := explain(cl, ns, name)
			if err != nil {
				return err
			}
			if why.PositionInLocalQueue != nil {
				// Queued: the controller's own order, when it serves it.
				o.servedWhy(cmd.Context(), &why, ns, cl.QueueNameOf(ns, name))
			}
			return o.print(why, func(w io.Writer) error { return whyTable(w, why) })
		},
	}
}

// workloadNameOf finds the name of the Workload of KIND/NAME in ns.
func workloadNameOf(ctx context.Context, c client.Reader, ns, ref string) (string, error) {
	kind, name, ok := strings.Cut(ref, "/")
	if !ok || name == "" {
		return "", fmt.Errorf("%q: want KIND/NAME, KIND one of job, jobset, rayjob, raycluster, trainjob, pod, workload", ref)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	switch strings.ToLower(kind) {
	case "workload", "workloads", "wl":
		return name, nil
	case "job", "jobs":
		job := &batchv1.Job{}
		if err := c.Get(ctx, key, job); err != nil {
			return "", notFound(err, "Job", key)
		}
		return jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), job.Name, string(job.UID)), nil
	case "jobset", "jobsets":
		js := &jobsetapi.JobSet{}
		if err := c.Get(ctx, key, js); err != nil {
			return "", notFound(err, "JobSet", key)
		}
		return jobframework.WorkloadName(jobsetapi.GroupVersion.WithKind("JobSet"), js.Name, string(js.UID)), nil
	case "rayjob", "rayjobs":
		rj := &rayv1.RayJob{}
		if err := c.Get(ctx, key, rj); err != nil {
			return "", notFound(err, "RayJob", key)
		}
		return jobframework.WorkloadName(rayv1.GroupVersion.WithKind("RayJob"), rj.Name, string(rj.UID)), nil
	case "raycluster", "rayclusters":
		rc := &rayv1.RayCluster{}
		if err := c.Get(ctx, key, rc); err != nil {
			return "", notFound(err, "RayCluster", key)
		}
		if ref := metav1.GetControllerOf(rc); ref != nil && ref.Kind == "RayJob" {
			// A RayJob's own cluster runs on the RayJob's Workload.
			name := jobframework.WorkloadName(rayv1.GroupVersion.WithKind("RayJob"), ref.Name, string(ref.UID))
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &berthv1alpha1.Workload{}); err == nil {
				return name, nil
			}
		}
		return jobframework.WorkloadName(rayv1.GroupVersion.WithKind("RayCluster"), rc.Name, string(rc.UID)), nil
	case "trainjob", "trainjobs":
		tj := &trainer.TrainJob{}
		if err := c.Get(ctx, key, tj); err != nil {
			return "", notFound(err, "TrainJob", key)
		}
		return jobframework.WorkloadName(trainer.GroupVersion.WithKind("TrainJob"), tj.Name, string(tj.UID)), nil
	case "pod", "pods", "po":
		pod := &corev1.Pod{}
		if err := c.Get(ctx, key, pod); err != nil {
			return "", notFound(err, "Pod", key)
		}
		if wl := pod.Labels[berthv1alpha1.WorkloadLabel]; wl != "" {
			return wl, nil
		}
		if group := pod.Labels[berthv1alpha1.PodGroupNameLabel]; group != "" && pod.Labels[berthv1alpha1.ManagedLabel] != "" {
			return groupWorkloadName(ctx, c, ns, group)
		}
		if pod.Labels[berthv1alpha1.ManagedLabel] != "" && pod.Labels[berthv1alpha1.QueueNameLabel] != "" {
			// A queued pod of its own, waiting: its Workload is named
			// after it.
			return jobframework.WorkloadName(corev1.SchemeGroupVersion.WithKind("Pod"), pod.Name, string(pod.UID)), nil
		}
		return "", fmt.Errorf("pod %s has no label %s: Berth has not admitted it", key, berthv1alpha1.WorkloadLabel)
	}
	return "", fmt.Errorf("%q: unknown kind %s, want job, jobset, rayjob, raycluster, trainjob, pod or workload", ref, kind)
}

// groupWorkloadName is the Workload of pod group group in ns; a group
// that has none yet waits for its pods, and the error says how many.
func groupWorkloadName(ctx context.Context, c client.Reader, ns, group string) (string, error) {
	wls := &berthv1alpha1.WorkloadList{}
	if err := c.List(ctx, wls, client.InNamespace(ns), client.MatchingLabels{berthv1alpha1.PodGroupNameLabel: group}); err != nil {
		return "", dashboard.ReadError(err)
	}
	for i := range wls.Items {
		if wls.Items[i].DeletionTimestamp.IsZero() {
			return wls.Items[i].Name, nil
		}
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{berthv1alpha1.PodGroupNameLabel: group}); err != nil {
		return "", dashboard.ReadError(err)
	}
	total := "?"
	for i := range pods.Items {
		if v := pods.Items[i].Annotations[berthv1alpha1.PodGroupTotalCountAnnotation]; v != "" {
			total = v
		}
	}
	return "", fmt.Errorf("pod group %s has no Workload yet: %d of its %s pods exist, and it is queued once all do (its pods' events say if they cannot be)",
		group, len(pods.Items), total)
}

func notFound(err error, kind string, key types.NamespacedName) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s not found in namespace %s", kind, key.Name, key.Namespace)
	}
	return dashboard.ReadError(err)
}

// explain says where the Workload ns/name is and why.
func explain(cl *dashboard.Cluster, ns, name string) (Why, error) {
	var wl *berthv1alpha1.Workload
	for _, w := range cl.Workloads {
		if w.Namespace == ns && w.Name == name {
			wl = w
		}
	}
	if wl == nil {
		return Why{}, fmt.Errorf("workload %s not found in namespace %s (a job gets one a moment after it is created)", name, ns)
	}
	why := Why{Workload: name, Ahead: []Ahead{}}
	why.State, why.Message = stateOf(cl, wl)
	if adm := wl.Status.Admission; adm != nil && workload.HasQuotaReservation(wl) {
		why.Topology = placedOf(adm)
	}
	for _, w := range cl.Workloads {
		if w.Namespace == ns && w.Labels[berthv1alpha1.SliceOfLabel] == name {
			slice, err := explain(cl, ns, w.Name)
			if err != nil {
				return Why{}, err
			}
			why.Slice = &slice
		}
	}
	positions := cl.Positions()
	p, queued := positions[workload.Key(wl)]
	if !queued {
		return why, nil
	}
	lq, cq := p.InLocalQueue, p.InClusterQueue
	why.PositionInLocalQueue = &lq
	if cq > 0 {
		why.PositionInClusterQueue = &cq
	}
	for _, other := range positions {
		if other.ClusterQueue != p.ClusterQueue || other.Workload == wl || !isAhead(other, p) {
			continue
		}
		why.Ahead = append(why.Ahead, Ahead{Namespace: other.Workload.Namespace, Name: other.Workload.Name, Priority: workload.Priority(other.Workload), Requests: dashboard.RequestsOf(other.Workload)})
	}
	slices.SortFunc(why.Ahead, func(a, b Ahead) int {
		return positions[a.Namespace+"/"+a.Name].Order() - positions[b.Namespace+"/"+b.Name].Order()
	})
	return why, nil
}

// isAhead reports whether a is tried before b in their ClusterQueue.
func isAhead(a, b dashboard.Position) bool {
	if a.InClusterQueue > 0 && b.InClusterQueue > 0 {
		return a.InClusterQueue < b.InClusterQueue
	}
	return a.Workload.Namespace == b.Workload.Namespace && a.Workload.Spec.QueueName == b.Workload.Spec.QueueName && a.InLocalQueue < b.InLocalQueue
}

// stateName is the workload's state.
func stateName(wl *berthv1alpha1.Workload) string {
	switch {
	case workload.IsFinished(wl):
		return StateFinished
	case workload.HasQuotaReservation(wl) && workload.IsEvicted(wl):
		return StateEvicted
	case workload.HasQuotaReservation(wl) && !workload.IsAdmitted(wl) && len(wl.Status.AdmissionChecks) > 0:
		return StateQuotaReserved
	case workload.HasQuotaReservation(wl):
		return StateAdmitted
	case !workload.IsActive(wl):
		return StateInactive
	}
	return StatePending
}

// stateOf is the workload's state and the message that explains it.
func stateOf(cl *dashboard.Cluster, wl *berthv1alpha1.Workload) (string, string) {
	msgOf := func(typ string) string {
		if c := workload.FindCondition(wl, typ); c != nil {
			return c.Message
		}
		return ""
	}
	switch state := stateName(wl); state {
	case StateFinished:
		return state, msgOf(berthv1alpha1.WorkloadFinished)
	case StateEvicted:
		return state, msgOf(berthv1alpha1.WorkloadEvicted)
	case StateQuotaReserved:
		return state, checksMessage(wl)
	case StateAdmitted:
		return state, msgOf(berthv1alpha1.WorkloadAdmitted)
	case StateInactive:
		return state, cmp.Or(dashboard.WaitingMessage(wl), workload.DeactivatedMessage)
	}
	if p := cl.PlacementOf(wl); p.NotQueued != "" {
		return StatePending, cmp.Or(dashboard.WaitingMessage(wl), p.NotQueued)
	}
	return StatePending, cmp.Or(dashboard.WaitingMessage(wl), "Waiting to be considered by the scheduler")
}

// checksMessage says which admission checks a workload holding quota
// waits on, and what each said.
func checksMessage(wl *berthv1alpha1.Workload) string {
	parts := make([]string, 0, len(wl.Status.AdmissionChecks))
	for _, c := range wl.Status.AdmissionChecks {
		part := fmt.Sprintf("%s %s", c.Name, c.State)
		if c.Message != "" {
			part += ": " + c.Message
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("Quota reserved in ClusterQueue %s; admitted once every admission check is Ready: %s",
		wl.Status.Admission.ClusterQueue, strings.Join(parts, "; "))
}

func whyTable(w io.Writer, why Why) error {
	if err := whyRows(w, why); err != nil || why.Slice == nil {
		return err
	}
	row(w, "")
	row(w, "Growing by a slice:")
	return whyRows(w, *why.Slice)
}

func whyRows(w io.Writer, why Why) error {
	row(w, "Workload:", why.Workload)
	row(w, "State:", why.State)
	row(w, "Why:", orDash(why.Message))
	for _, ps := range slices.Sorted(maps.Keys(why.Topology)) {
		row(w, "Placed ("+ps+"):", why.Topology[ps])
	}
	if why.PositionInLocalQueue != nil {
		pos := fmt.Sprintf("%d in its LocalQueue", *why.PositionInLocalQueue)
		if why.PositionInClusterQueue != nil {
			pos += fmt.Sprintf(", %d in its ClusterQueue", *why.PositionInClusterQueue)
		}
		row(w, "Position:", pos)
	}
	if why.AheadElsewhere > 0 {
		row(w, "Ahead of it elsewhere:", fmt.Sprintf("%d workloads of LocalQueues you may not read", why.AheadElsewhere))
	}
	if len(why.Ahead) == 0 {
		return nil
	}
	row(w, "Ahead of it:")
	row(w, "  NAMESPACE", "NAME", "PRIORITY", "REQUESTS")
	for _, a := range why.Ahead {
		var req []string
		for _, k := range slices.Sorted(maps.Keys(a.Requests)) {
			req = append(req, k+"="+a.Requests[k])
		}
		row(w, "  "+a.Namespace, a.Name, a.Priority, strings.Join(req, ","))
	}
	return nil
}
