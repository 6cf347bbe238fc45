package kubectlberth

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/scheduler"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/fabric"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// WhatIf is the output of kubectl berth what-if.
type WhatIf struct {
	Admitted     bool   `json:"admitted"`
	ClusterQueue string `json:"clusterQueue"`
	// Flavors is, per podset, the flavor of each resource.
	Flavors  map[string]map[string]string `json:"flavors"`
	Borrows  bool                         `json:"borrows"`
	Preempts []Ref                        `json:"preempts"`
	Message  string                       `json:"message"`
	// Topology is, per podset admitted to a flavor with a Topology, the
	// domains it would get and their pod counts.
	Topology map[string]string `json:"topology,omitempty"`
}

// Ref names a workload.
type Ref struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (o *options) whatIfCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "what-if -f FILE",
		Short: "Would this Job, JobSet or Workload be admitted now? Berth's own engine judges it on the live cluster, and nothing is written",
		Example: `  # Before submitting a Job
  kubectl berth what-if -f train.yaml -n team-a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("what-if needs -f FILE, a Job, JobSet or Workload manifest")
			}
			c, ns, err := o.prepare()
			if err != nil {
				return err
			}
			wl, err := workloadOfManifest(cmd.Context(), c, file, ns)
			if err != nil {
				return err
			}
			cl, err := dashboard.Load(cmd.Context(), c, "", wl.Namespace)
			if err != nil {
				return err
			}
			out, err := judge(cmd.Context(), c, cl, wl)
			if err != nil {
				return err
			}
			return o.print(out, func(w io.Writer) error { return whatIfTable(w, out) })
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "The manifest: a Job, JobSet or Workload.")
	return cmd
}

// workloadOfManifest is the Workload the controller would make of the job
// in file, or the Workload in it, in namespace ns unless it names one.
func workloadOfManifest(ctx context.Context, c client.Client, file string, ns string) (*berthv1alpha1.Workload, error) {
	data, err := readManifest(file)
	if err != nil {
		return nil, err
	}
	obj, gvk, err := serializer.NewCodecFactory(c.Scheme()).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: not a manifest Berth knows: %w", file, err)
	}
	cobj, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s: a %s is not a job", file, gvk.Kind)
	}
	cobj.GetObjectKind().SetGroupVersionKind(*gvk)
	if cobj.GetNamespace() == "" {
		cobj.SetNamespace(ns)
	}
	if cobj.GetName() == "" {
		cobj.SetName("what-if")
	}
	if cobj.GetUID() == "" {
		cobj.SetUID(types.UID("what-if"))
	}
	if wl, ok := cobj.(*berthv1alpha1.Workload); ok {
		return wl, nil
	}
	if _, ok := jobframework.ForKind(*gvk); !ok {
		return nil, fmt.Errorf("%s: a %s is not a kind Berth runs (known: %v)", file, gvk.Kind, jobframework.Names())
	}
	if jobframework.QueueName(cobj) == "" {
		return nil, fmt.Errorf("%s: %s %s has no label %s: Berth would leave it alone", file, gvk.Kind, cobj.GetName(), berthv1alpha1.QueueNameLabel)
	}
	return jobframework.WorkloadFor(ctx, c, cobj)
}

func readManifest(file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(file)
}

// judge runs Berth's scheduler once on a snapshot of cl with wl queued
// behind what already waits, and says what it decided about wl. The
// applier records decisions and writes nothing.
func judge(ctx context.Context, r client.Reader, cl *dashboard.Cluster, wl *berthv1alpha1.Workload) (WhatIf, error) {
	wl = wl.DeepCopy()
	wl.CreationTimestamp = metav1.NewTime(time.Now())
	out := WhatIf{Flavors: map[string]map[string]string{}, Preempts: []Ref{}}
	if err := resolvePriority(ctx, r, wl); err != nil {
		out.Message = "It would not be queued: " + err.Error()
		return out, nil
	}
	if cl.QueuesUnknown {
		return out, fmt.Errorf("not allowed to read ClusterQueues, flavors and cohorts, which what-if judges on")
	}
	p := cl.PlacementOf(wl)
	if p.NotQueued != "" {
		out.Message = "It would not be queued: " + p.NotQueued
		return out, nil
	}
	out.ClusterQueue = p.ClusterQueue
	c, q := cache.New(), queue.NewManager()
	note := engineState(cl, c, q)
	if fabrics, why := fabricsOf(ctx, r, cl); fabrics != nil {
		c.SetFabrics(fabrics)
	} else if why != "" {
		note = strings.TrimPrefix(note+"; "+why, "; ")
	}
	if err := q.AddOrUpdateWorkload(wl, berthv1alpha1.ClusterQueueReference(p.ClusterQueue)); err != nil {
		return out, err
	}
	before, _, _ := c.ClusterQueueUsage(berthv1alpha1.ClusterQueueReference(p.ClusterQueue))
	rec := &recorder{key: workload.Key(wl)}
	scheduler.New(c, q, rec).Schedule(ctx)
	switch {
	case rec.admission != nil:
		out.Admitted = true
		for _, psa := range rec.admission.PodSetAssignments {
			byRes := map[string]string{}
			for res, f := range psa.Flavors {
				byRes[string(res)] = string(f)
			}
			out.Flavors[psa.Name] = byRes
		}
		out.Topology = placedOf(rec.admission)
		out.Borrows = borrows(cl.ClusterQueues[p.ClusterQueue], before, workload.AdmissionUsage(rec.admission))
		out.Message = fmt.Sprintf("It would be admitted by ClusterQueue %s now", p.ClusterQueue)
		if out.Borrows {
			out.Message += ", borrowing from its cohort"
		}
	case len(rec.preempts) > 0:
		out.Preempts = rec.preempts
		out.Message = fmt.Sprintf("It would preempt %d workloads, and be admitted once they have stopped: %s", len(rec.preempts), rec.pending)
	default:
		out.Message = cmp.Or(rec.pending, "It would wait: the scheduler did not reach it in one cycle")
	}
	if note != "" {
		out.Message += " (" + note + ")"
	}
	return out, nil
}

// fabricsOf reads, when a flavor names a Topology, the Topologies, the
// nodes and the pods bound to them, as the controller's informers do; nil
// and why when they cannot be read.
func fabricsOf(ctx context.Context, r client.Reader, cl *dashboard.Cluster) (cache.Fabrics, string) {
	if !slices.ContainsFunc(cl.Flavors, func(rf berthv1alpha1.ResourceFlavor) bool { return rf.Spec.TopologyName != nil }) {
		return nil, ""
	}
	t := fabric.NewTracker(nil)
	topologies, nodes, pods := &berthv1alpha1.TopologyList{}, &corev1.NodeList{}, &corev1.PodList{}
	for _, l := range []client.ObjectList{topologies, nodes} {
		if err := r.List(ctx, l); err != nil {
			return nil, "the flavors' topologies not judged: " + dashboard.ReadError(err).Error()
		}
	}
	if err := r.List(ctx, pods, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.nodeName", "")}); err != nil {
		return nil, "the flavors' topologies not judged: " + dashboard.ReadError(err).Error()
	}
	for i := range topologies.Items {
		t.Observe(&topologies.Items[i])
	}
	for i := range nodes.Items {
		t.Observe(&nodes.Items[i])
	}
	for i := range pods.Items {
		t.Observe(&pods.Items[i])
	}
	return t, ""
}

// placedOf renders, per podset, the topology assignment of adm: each
// domain's values and its pods, e.g. "block-0/rack-0-1/host-3: 1".
func placedOf(adm *berthv1alpha1.Admission) map[string]string {
	var out map[string]string
	for _, psa := range adm.PodSetAssignments {
		ta := psa.TopologyAssignment
		if ta == nil {
			continue
		}
		parts := make([]string, len(ta.Domains))
		for i, d := range ta.Domains {
			parts[i] = fmt.Sprintf("%s: %d", strings.Join(d.Values, "/"), d.Count)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[psa.Name] = strings.Join(parts, ", ")
	}
	return out
}

// resolvePriority sets wl's priority from its class, as the controller
// does.
func resolvePriority(ctx context.Context, r client.Reader, wl *berthv1alpha1.Workload) error {
	class := wl.Spec.PriorityClassName
	if class == "" {
		return nil
	}
	wpc := &berthv1alpha1.WorkloadPriorityClass{}
	if err := r.Get(ctx, types.NamespacedName{Name: class}, wpc); err != nil {
		return fmt.Errorf("WorkloadPriorityClass %s: %w", class, dashboard.ReadError(err))
	}
	wl.Spec.Priority = ptr.To(wpc.Value)
	return nil
}

// engineState loads cl into an engine's cache and queues: every flavor,
// cohort and queue, the quota held, and the workloads that wait. A user
// who may read only one namespace's Workloads gets the quota held from the
// ClusterQueues' status instead, and a note that says so.
func engineState(cl *dashboard.Cluster, c *cache.Cache, q *queue.Manager) string {
	cl.LoadQuotaTree(c)
	for i := range cl.Cohorts {
		q.AddOrUpdateCohort(&cl.Cohorts[i])
	}
	for _, name := range slices.Sorted(maps.Keys(cl.ClusterQueues)) {
		q.AddOrUpdateClusterQueue(cl.ClusterQueues[name])
	}
	if !cl.AllNamespaces {
		cl.LoadStatusUsage(c)
		return "judged on the quota in use from the ClusterQueues' status: without the right to read every namespace's Workloads, what waits ahead and what could be preempted are not known"
	}
	for _, wl := range cl.Workloads {
		switch {
		case workload.IsFinished(wl):
		case workload.HasQuotaReservation(wl):
			c.AddOrUpdateWorkload(wl)
		default:
			if p := cl.PlacementOf(wl); p.NotQueued == "" {
				_ = q.AddOrUpdateWorkload(wl, berthv1alpha1.ClusterQueueReference(p.ClusterQueue))
			}
		}
	}
	return ""
}

// borrows reports whether adding u to the queue's usage before would put
// it above its nominal quota somewhere.
func borrows(cq *berthv1alpha1.ClusterQueue, before, u resources.Usage) bool {
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				fr := resources.FlavorResource{Flavor: f.Name, Resource: r.Name}
				if u[fr] > 0 && resources.Add(before[fr], u[fr]) > resources.Value(r.Name, r.NominalQuota) {
					return true
				}
			}
		}
	}
	return false
}

// recorder is the what-if's scheduler.Applier: it records what the cycle
// decided about one workload, and lets every other decision succeed in
// memory only.
type recorder struct {
	key string

	mu        sync.Mutex
	admission *berthv1alpha1.Admission
	preempts  []Ref
	pending   string
}

var _ scheduler.Applier = (*recorder)(nil)

// Admit records the admission of the workload asked about.
func (r *recorder) Admit(_ context.Context, wl *berthv1alpha1.Workload, adm *berthv1alpha1.Admission) (*berthv1alpha1.Workload, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if workload.Key(wl) == r.key {
		r.admission = adm
	}
	// No object comes back: nothing was written.
	return nil, nil
}

// Preempt records a victim of the workload asked about.
func (r *recorder) Preempt(_ context.Context, victim *berthv1alpha1.Workload, _, message string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Contains(message, "workload "+r.key+" ") {
		r.preempts = append(r.preempts, Ref{Namespace: victim.Namespace, Name: victim.Name})
	}
	return nil
}

// SetPending records why the workload asked about waits.
func (r *recorder) SetPending(wl *berthv1alpha1.Workload, _, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if workload.Key(wl) == r.key {
		r.pending = message
	}
}

func whatIfTable(w io.Writer, out WhatIf) error {
	row(w, "Admitted:", out.Admitted)
	row(w, "ClusterQueue:", orDash(out.ClusterQueue))
	for _, ps := range slices.Sorted(maps.Keys(out.Flavors)) {
		var parts []string
		for _, res := range slices.Sorted(maps.Keys(out.Flavors[ps])) {
			parts = append(parts, res+"="+out.Flavors[ps][res])
		}
		row(w, "Flavors of "+ps+":", strings.Join(parts, ", "))
	}
	for _, ps := range slices.Sorted(maps.Keys(out.Topology)) {
		row(w, "Placed ("+ps+"):", out.Topology[ps])
	}
	row(w, "Borrows:", out.Borrows)
	for _, p := range out.Preempts {
		row(w, "Preempts:", p.Namespace+"/"+p.Name)
	}
	row(w, "Why:", out.Message)
	return nil
}
