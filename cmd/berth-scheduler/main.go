// Command berth-scheduler is kube-scheduler with Berth's plugins compiled in:
// BerthGang holds the pods of a podset at Permit until all of them have a
// node, and BerthGPUPacking packs a workload's GPU pods onto few nodes.
//
// It lives in its own Go module so that the controller's module never depends
// on k8s.io/kubernetes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/berth-dev/berth/cmd/berth-scheduler/plugins/gang"
	"github.com/berth-dev/berth/cmd/berth-scheduler/plugins/gpupacking"
)

func main() {
	cmd := app.NewSchedulerCommand(
		app.WithPlugin(gang.Name, gang.New),
		app.WithPlugin(gpupacking.Name, gpupacking.New),
	)
	os.Exit(cli.Run(cmd))
}
