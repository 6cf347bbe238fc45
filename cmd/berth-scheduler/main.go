// Command berth-scheduler is kube-scheduler with Berth's plugins compiled in:
// BerthGang holds the pods of a podset at Permit until all of them have a
// node, BerthGPUPacking packs a workload's GPU pods onto few nodes, and
// BerthTopology keeps a podset admitted on a Topology inside its domains.
//
// It lives in its own Go module so that the controller's module never depends
// on k8s.io/kubernetes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/berth-dev/berth/cmd/berth-scheduler/plugins/gang"
	"github.com/berth-dev/berth/cmd/berth-scheduler/plugins/gpupacking"
	"github.com/berth-dev/berth/cmd/berth-scheduler/plugins/topology"
)

// berthPlugins are the plugins compiled in beside kube-scheduler's own.
var berthPlugins = frameworkruntime.Registry{
	gang.Name:       gang.New,
	gpupacking.Name: gpupacking.New,
	topology.Name:   topology.New,
}

func main() {
	var opts []app.Option
	for name, factory := range berthPlugins {
		opts = append(opts, app.WithPlugin(name, factory))
	}
	os.Exit(cli.Run(app.NewSchedulerCommand(opts...)))
}
