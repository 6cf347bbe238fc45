// Command kubectl-berth is the kubectl plugin kubectl berth (see
// pkg/kubectlberth). Put it on PATH and kubectl finds it.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/berth-dev/berth/pkg/kubectlberth"
)

// version is the release's, set by hack/release.sh (-X main.version).
var version = "devel"

func main() {
	cmd := kubectlberth.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.Version = version
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
