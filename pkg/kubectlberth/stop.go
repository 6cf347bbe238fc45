package kubectlberth

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// stopCommand is kubectl berth stop (stop true) or resume: a queue's
// stopPolicy, or a workload's spec.active.
func (o *options) stopCommand(stop bool) *cobra.Command {
	verb := "resume"
	if stop {
		verb = "stop"
	}
	var drain bool
	cmd := &cobra.Command{
		Use:   verb + " (clusterqueue|localqueue|workload) NAME",
		Short: map[bool]string{true: "Hold a queue (--drain: and evict what it admitted), or deactivate a workload", false: "Let a queue admit again, or reactivate a workload"}[stop],
		Example: map[bool]string{
			true: `  # Admit nothing more from a ClusterQueue; what runs goes on
  kubectl berth stop clusterqueue team-a
  # And evict what it admitted
  kubectl berth stop clusterqueue team-a --drain
  # Take a workload out of its queue
  kubectl berth stop workload job-train-3f2a1 -n team-a`,
			false: `  kubectl berth resume clusterqueue team-a
  kubectl berth resume workload job-train-3f2a1 -n team-a`,
		}[stop],
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			obj, patch, err := stopPatch(args[0], args[1], ns, stop, drain)
			if err != nil {
				return err
			}
			if err := c.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return notFound(err, args[0], types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
			}
			_, err = fmt.Fprintf(o.streams.Out, "%s/%s %s\n", args[0], args[1], map[bool]string{true: "stopped", false: "resumed"}[stop])
			return err
		},
	}
	if stop {
		cmd.Flags().BoolVar(&drain, "drain", false, "Also evict the workloads the queue admitted (stopPolicy HoldAndDrain).")
	}
	return cmd
}

// stopPatch is the object and merge patch that stop or resume writes.
func stopPatch(kind, name, ns string, stop, drain bool) (client.Object, []byte, error) {
	policy := berthv1alpha1.None
	switch {
	case stop && drain:
		policy = berthv1alpha1.HoldAndDrain
	case stop:
		policy = berthv1alpha1.Hold
	}
	switch kind {
	case "clusterqueue", "cq":
		obj := &berthv1alpha1.ClusterQueue{}
		obj.Name = name
		return obj, fmt.Appendf(nil, `{"spec":{"stopPolicy":%q}}`, policy), nil
	case "localqueue", "lq":
		obj := &berthv1alpha1.LocalQueue{}
		obj.Name, obj.Namespace = name, ns
		return obj, fmt.Appendf(nil, `{"spec":{"stopPolicy":%q}}`, policy), nil
	case "workload", "wl":
		if drain {
			return nil, nil, fmt.Errorf("--drain is for queues; a stopped workload is always evicted")
		}
		obj := &berthv1alpha1.Workload{}
		obj.Name, obj.Namespace = name, ns
		return obj, fmt.Appendf(nil, `{"spec":{"active":%t}}`, !stop), nil
	}
	return nil, nil, fmt.Errorf("cannot stop a %q: want clusterqueue, localqueue or workload", kind)
}
