package kubectlberth

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/pkg/dashboard"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Position is one pending workload of kubectl berth positions -o json.
type Position struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	LocalQueue   string `json:"localQueue"`
	ClusterQueue string `json:"clusterQueue"`
	Priority     int32  `json:"priority"`
	// PositionInLocalQueue and PositionInClusterQueue count from 1. The
	// second is null for a user who may not read every namespace's
	// Workloads.
	PositionInLocalQueue   int    `json:"positionInLocalQueue"`
	PositionInClusterQueue *int   `json:"positionInClusterQueue"`
	Message                string `json:"message"`
}

// PositionList is the output of kubectl berth positions.
type PositionList struct {
	Items []Position `json:"items"`
}

func (o *options) positionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "positions (localqueue|clusterqueue) NAME",
		Short: "The pending workloads of a queue, in the order Berth will try them",
		Example: `  # Your namespace's queue
  kubectl berth positions localqueue main -n team-a
  # A ClusterQueue, whose workloads come from many namespaces
  kubectl berth positions clusterqueue team-a`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name := args[0], args[1]
			switch kind {
			case "localqueue", "lq", "clusterqueue", "cq":
			default:
				return fmt.Errorf("positions of %q: want localqueue or clusterqueue", kind)
			}
			c, ns, err := o.prepare()
			if err != nil {
				return err
			}
			servedNS := ns
			if kind == "clusterqueue" || kind == "cq" {
				servedNS = ""
			}
			if s, ok := o.servedQueue(cmd.Context(), servedNS, name); ok {
				list := servedPositions(s)
				return o.print(list, func(w io.Writer) error { return positionsTable(w, list) })
			}
			cl, err := dashboard.Load(cmd.Context(), c, "", ns)
			if err != nil {
				return err
			}
			list, err := positionsOf(cl, kind, ns, name)
			if err != nil {
				return err
			}
			return o.print(list, func(w io.Writer) error { return positionsTable(w, list) })
		},
	}
}

// positionsOf lists the queued workloads of one LocalQueue (in ns) or
// ClusterQueue, in order.
func positionsOf(cl *dashboard.Cluster, kind, ns, name string) (PositionList, error) {
	local := kind == "localqueue" || kind == "lq"
	if local && cl.LocalQueues[ns+"/"+name] == nil {
		return PositionList{}, fmt.Errorf("LocalQueue %s not found in namespace %s", name, ns)
	}
	if !local && cl.QueuesUnknown {
		return PositionList{}, fmt.Errorf("not allowed to read ClusterQueues: ask for the positions in your LocalQueue instead")
	}
	if !local && cl.ClusterQueues[name] == nil {
		return PositionList{}, fmt.Errorf("ClusterQueue %s not found", name)
	}
	list := PositionList{Items: []Position{}}
	for _, p := range cl.Positions() {
		if (local && (p.Workload.Namespace != ns || string(p.Workload.Spec.QueueName) != name)) || (!local && p.ClusterQueue != name) {
			continue
		}
		list.Items = append(list.Items, positionItem(p))
	}
	slices.SortFunc(list.Items, func(a, b Position) int {
		if local || a.PositionInClusterQueue == nil || b.PositionInClusterQueue == nil {
			return a.PositionInLocalQueue - b.PositionInLocalQueue
		}
		return *a.PositionInClusterQueue - *b.PositionInClusterQueue
	})
	return list, nil
}

func positionItem(p dashboard.Position) Position {
	out := Position{
		Namespace: p.Workload.Namespace, Name: p.Workload.Name, LocalQueue: string(p.Workload.Spec.QueueName), ClusterQueue: p.ClusterQueue,
		Priority: workload.Priority(p.Workload), PositionInLocalQueue: p.InLocalQueue, Message: dashboard.WaitingMessage(p.Workload),
	}
	if p.InClusterQueue > 0 {
		n := p.InClusterQueue
		out.PositionInClusterQueue = &n
	}
	return out
}

func positionsTable(w io.Writer, list PositionList) error {
	row(w, "CQ", "LQ", "NAMESPACE", "NAME", "PRIORITY", "LOCALQUEUE", "MESSAGE")
	for _, p := range list.Items {
		cq := "?"
		if p.PositionInClusterQueue != nil {
			cq = fmt.Sprint(*p.PositionInClusterQueue)
		}
		row(w, cq, p.PositionInLocalQueue, p.Namespace, p.Name, p.Priority, p.LocalQueue, orDash(p.Message))
	}
	return nil
}
