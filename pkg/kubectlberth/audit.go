package kubectlberth

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/config"
	"github.com/berth-dev/berth/pkg/dashboard"
	"github.com/berth-dev/berth/pkg/engine/audit"
	"github.com/berth-dev/berth/pkg/engine/resources"
)

// Audit is the output of kubectl berth audit: the ClusterQueues whose
// running pods use what no admission holds, by name; none when all is
// well.
type Audit struct {
	ClusterQueues []AuditedClusterQueue `json:"clusterQueues"`
}

// AuditedClusterQueue is what the audit found in one ClusterQueue.
type AuditedClusterQueue struct {
	Name      string            `json:"name"`
	Resources []AuditedResource `json:"resources"`
	Pods      []UnaccountedPod  `json:"pods"`
}

// AuditedResource is one resource that pods use beyond their admission:
// over the findings, what the admissions hold, what the pods use, and the
// difference.
type AuditedResource struct {
	Name        string `json:"name"`
	Admitted    string `json:"admitted"`
	Running     string `json:"running"`
	Unaccounted string `json:"unaccounted"`
}

// UnaccountedPod is a running pod named in a finding, with the reason
// (audit.ReasonBeyondAdmission, ReasonWorkloadNotAdmitted or
// ReasonNoWorkload) and its Workload, if it has one.
type UnaccountedPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	Workload  string `json:"workload,omitempty"`
	Node      string `json:"node"`
	// Requests are all of the pod's requests.
	Requests corev1.ResourceList `json:"requests"`
	requests resources.Requests
}

func (o *options) auditCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "audit",
		Short: "Pods that run beyond what their ClusterQueue admitted, by ClusterQueue and resource; exit status 1 when there is one",
		Example: `  # Every namespace you may read, as a check in a script
  kubectl berth audit -A
  # One namespace, as JSON
  kubectl berth audit -n team-a -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := o.prepare()
			if err != nil {
				return err
			}
			if o.allNamespaces {
				ns = ""
			}
			in, err := auditInput(cmd.Context(), c, ns)
			if err != nil {
				return dashboard.ReadError(err)
			}
			found := auditOf(audit.Compare(in))
			if err := o.print(found, func(w io.Writer) error { return auditTable(w, found) }); err != nil {
				return err
			}
			switch n := len(found.ClusterQueues); n {
			case 0:
				return nil
			case 1:
				return fmt.Errorf("pods run beyond what was admitted in ClusterQueue %s", found.ClusterQueues[0].Name)
			default:
				return fmt.Errorf("pods run beyond what was admitted in %d ClusterQueues", n)
			}
		},
	}
}

// auditInput reads, in namespace ns ("" for all), what the controller's
// audit reads: the pods Berth holds or runs (berth.dev/managed) and the
// pods that name a LocalQueue without it, the Workloads and the
// LocalQueues. The plugin does not know the controller's configuration: a
// queued pod counts in every namespace that its default pod namespace
// selector selects (all but kube-system and berth-system).
func auditInput(ctx context.Context, c client.Reader, ns string) (audit.Input, error) {
	managed, queued := audit.PodSelectors()
	var in audit.Input
	for _, sel := range []labels.Selector{managed, queued} {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return audit.Input{}, err
		}
		for i := range pods.Items {
			in.Pods = append(in.Pods, &pods.Items[i])
		}
	}
	wls, lqs := &berthv1alpha1.WorkloadList{}, &berthv1alpha1.LocalQueueList{}
	if err := dashboard.ListIn(ctx, c, ns, wls, lqs); err != nil {
		return audit.Input{}, err
	}
	for i := range wls.Items {
		in.Workloads = append(in.Workloads, &wls.Items[i])
	}
	for i := range lqs.Items {
		in.LocalQueues = append(in.LocalQueues, &lqs.Items[i])
	}
	selector, err := metav1.LabelSelectorAsSelector(config.DefaultManagedNamespaceSelector())
	if err != nil {
		return audit.Input{}, err
	}
	in.Managed = func(ns string) bool { return selector.Matches(labels.Set{corev1.LabelMetadataName: ns}) }
	return in, nil
}

// auditOf renders what the audit found.
func auditOf(r audit.Report) Audit {
	out := Audit{ClusterQueues: []AuditedClusterQueue{}}
	for _, cq := range r.ClusterQueues {
		a := AuditedClusterQueue{Name: cq.Name, Resources: []AuditedResource{}, Pods: []UnaccountedPod{}}
		for _, name := range cq.Unaccounted.Names() {
			a.Resources = append(a.Resources, AuditedResource{Name: string(name), Admitted: resources.Format(name, cq.Admitted[name]),
				Running: resources.Format(name, cq.Running[name]), Unaccounted: resources.Format(name, cq.Unaccounted[name])})
		}
		for _, f := range cq.Findings {
			for _, p := range f.Pods {
				pod := UnaccountedPod{Namespace: p.Namespace, Name: p.Name, Reason: f.Reason, Node: p.Node,
					Requests: p.Requests.ToList(), requests: p.Requests}
				if f.Workload != nil {
					pod.Workload = f.Workload.Name
				}
				a.Pods = append(a.Pods, pod)
			}
		}
		out.ClusterQueues = append(out.ClusterQueues, a)
	}
	return out
}

// auditTable prints the resources beyond admission, then the pods.
func auditTable(w io.Writer, a Audit) error {
	if len(a.ClusterQueues) == 0 {
		fmt.Fprintln(w, "no unaccounted resources: every running pod is within what its ClusterQueue admitted")
		return nil
	}
	row(w, "CLUSTERQUEUE", "RESOURCE", "ADMITTED", "RUNNING", "UNACCOUNTED")
	for _, cq := range a.ClusterQueues {
		for _, r := range cq.Resources {
			row(w, cq.Name, r.Name, r.Admitted, r.Running, r.Unaccounted)
		}
	}
	fmt.Fprintln(w)
	row(w, "CLUSTERQUEUE", "POD", "NODE", "REQUESTS", "REASON", "WORKLOAD")
	for _, cq := range a.ClusterQueues {
		for _, p := range cq.Pods {
			row(w, cq.Name, p.Namespace+"/"+p.Name, p.Node, audit.Describe(p.requests), p.Reason, orDash(p.Workload))
		}
	}
	return nil
}
