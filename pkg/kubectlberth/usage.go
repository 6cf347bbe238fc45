package kubectlberth

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
)

// Usage is the output of kubectl berth usage: the cohorts, each with its
// ClusterQueues. ClusterQueues in no cohort are in the entry with an empty
// name.
type Usage struct {
	Cohorts []CohortUsage `json:"cohorts"`
}

// CohortUsage is one cohort.
type CohortUsage struct {
	Name          string              `json:"name"`
	Parent        string              `json:"parent"`
	ClusterQueues []ClusterQueueUsage `json:"clusterQueues"`
}

// ClusterQueueUsage is one ClusterQueue's quota and usage, and while fair
// sharing is on its weight and weighted share (status.fairSharing).
type ClusterQueueUsage struct {
	Name          string        `json:"name"`
	Flavors       []FlavorUsage `json:"flavors"`
	Weight        string        `json:"weight,omitempty"`
	WeightedShare *int64        `json:"weightedShare,omitempty"`
}

// FlavorUsage is one flavor of a ClusterQueue.
type FlavorUsage struct {
	Name      string          `json:"name"`
	Resources []ResourceUsage `json:"resources"`
}

// ResourceUsage is one resource of a flavor: nominal quota, in use (the
// borrowed part included), borrowed, and what the queue may lend.
type ResourceUsage struct {
	Name     string `json:"name"`
	Nominal  string `json:"nominal"`
	Used     string `json:"used"`
	Borrowed string `json:"borrowed"`
	Lendable string `json:"lendable"`
}

func (o *options) usageCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "usage [COHORT]",
		Short: "The cohort tree: per ClusterQueue, flavor and resource, the quota, what is used, borrowed and lendable",
		Example: `  # Every cohort
  kubectl berth usage
  # One cohort's tree, as YAML
  kubectl berth usage research -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.prepare()
			if err != nil {
				return err
			}
			cl, err := dashboard.Load(cmd.Context(), c, "", ns)
			if err != nil {
				return err
			}
			only := ""
			if len(args) == 1 {
				only = args[0]
			}
			u, err := usageOf(cl, only)
			if err != nil {
				return err
			}
			return o.print(u, func(w io.Writer) error { return usageTable(w, u) })
		},
	}
}

// usageOf builds the cohort tree from the ClusterQueues' status; with
// only, the subtree of that cohort.
func usageOf(cl *dashboard.Cluster, only string) (Usage, error) {
	if cl.QueuesUnknown {
		return Usage{}, fmt.Errorf("not allowed to read ClusterQueues and Cohorts")
	}
	groups := cl.ByCohort()
	parents := map[string]string{}
	for _, g := range groups {
		parents[g.Name] = g.Parent
	}
	if _, ok := parents[only]; !ok && only != "" {
		return Usage{}, fmt.Errorf("cohort %s not found: no Cohort object and no ClusterQueue names it", only)
	}
	u := Usage{Cohorts: []CohortUsage{}}
	for _, g := range groups {
		if only != "" && !under(parents, g.Name, only) {
			continue
		}
		cqs := []ClusterQueueUsage{}
		for _, cq := range g.Queues {
			cqs = append(cqs, clusterQueueUsage(cq))
		}
		u.Cohorts = append(u.Cohorts, CohortUsage{Name: g.Name, Parent: g.Parent, ClusterQueues: cqs})
	}
	return u, nil
}

// under reports whether cohort is root or below it, through parents
// (which may hold a cycle).
func under(parents map[string]string, cohort, root string) bool {
	for seen := 0; cohort != "" && seen <= len(parents); seen++ {
		if cohort == root {
			return true
		}
		cohort = parents[cohort]
	}
	return false
}

func clusterQueueUsage(cq *berthv1alpha1.ClusterQueue) ClusterQueueUsage {
	used := map[string]berthv1alpha1.ResourceUsage{}
	for _, fu := range cq.Status.FlavorsUsage {
		for _, r := range fu.Resources {
			used[string(fu.Name)+"/"+string(r.Name)] = r
		}
	}
	out := ClusterQueueUsage{Name: cq.Name, Flavors: []FlavorUsage{}}
	if fs := cq.Status.FairSharing; fs != nil {
		out.WeightedShare = &fs.WeightedShare
		out.Weight = "1"
		if cq.Spec.FairSharing != nil && cq.Spec.FairSharing.Weight != nil {
			out.Weight = cq.Spec.FairSharing.Weight.String()
		}
	}
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			fu := FlavorUsage{Name: string(f.Name), Resources: []ResourceUsage{}}
			for _, r := range f.Resources {
				lendable := r.NominalQuota
				if r.LendingLimit != nil {
					lendable = *r.LendingLimit
				}
				u := used[string(f.Name)+"/"+string(r.Name)]
				fu.Resources = append(fu.Resources, ResourceUsage{
					Name: string(r.Name), Nominal: r.NominalQuota.String(), Used: quantityString(u.Total),
					Borrowed: quantityString(u.Borrowed), Lendable: lendable.String(),
				})
			}
			out.Flavors = append(out.Flavors, fu)
		}
	}
	return out
}

func quantityString(q resource.Quantity) string {
	if q.IsZero() {
		return "0"
	}
	return q.String()
}

func usageTable(w io.Writer, u Usage) error {
	// The share columns only while fair sharing is on.
	fair := false
	for _, c := range u.Cohorts {
		for _, cq := range c.ClusterQueues {
			fair = fair || cq.WeightedShare != nil
		}
	}
	header := []any{"COHORT", "CLUSTERQUEUE", "FLAVOR", "RESOURCE", "NOMINAL", "USED", "BORROWED", "LENDABLE"}
	if fair {
		header = append(header, "WEIGHT", "SHARE")
	}
	row(w, header...)
	for _, c := range u.Cohorts {
		label := orDash(c.Name)
		if c.Parent != "" {
			label += " (in " + c.Parent + ")"
		}
		if len(c.ClusterQueues) == 0 {
			cells := []any{label}
			for range len(header) - 1 {
				cells = append(cells, "-")
			}
			row(w, cells...)
		}
		for _, cq := range c.ClusterQueues {
			for _, f := range cq.Flavors {
				for _, r := range f.Resources {
					cells := []any{label, cq.Name, f.Name, r.Name, r.Nominal, r.Used, r.Borrowed, r.Lendable}
					if fair {
						cells = append(cells, orDash(cq.Weight), shareString(cq.WeightedShare))
					}
					row(w, cells...)
				}
			}
		}
	}
	return nil
}

// shareString is a weighted share as the table shows it: "inf" for the
// share of a queue of weight 0 that borrows.
func shareString(share *int64) string {
	switch {
	case share == nil:
		return "-"
	case *share == math.MaxInt64:
		return "inf"
	}
	return strconv.FormatInt(*share, 10)
}
