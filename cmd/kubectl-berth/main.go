// Command kubectl-berth is the kubectl plugin kubectl berth (see
// pkg/kubectlberth). Put it on PATH and kubectl finds it.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/berth-dev/berth/pkg/kubectlberth"
)

func main() {
	cmd := kubectlberth.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
