package kubectlberth

import (
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	// The job kinds what-if and why know.
	_ "github.com/berth-dev/berth/pkg/jobs/deployment"
	_ "github.com/berth-dev/berth/pkg/jobs/job"
	_ "github.com/berth-dev/berth/pkg/jobs/jobset"
	_ "github.com/berth-dev/berth/pkg/jobs/leaderworkerset"
	_ "github.com/berth-dev/berth/pkg/jobs/pod"
	_ "github.com/berth-dev/berth/pkg/jobs/raycluster"
	_ "github.com/berth-dev/berth/pkg/jobs/rayjob"
	_ "github.com/berth-dev/berth/pkg/jobs/statefulset"
	_ "github.com/berth-dev/berth/pkg/jobs/trainjob"
)

// options are what every command shares: kubectl's flags, the output
// format and the streams.
type options struct {
	flags         *genericclioptions.ConfigFlags
	streams       genericiooptions.IOStreams
	output        string
	allNamespaces bool
	// newClient makes the client; tests replace it.
	newClient func() (client.Client, error)
	// pending reads the visibility API; tests replace it.
	pending pendingPage
}

// NewCommand is kubectl berth.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newCommand(streams, nil)
}

// newCommand is kubectl berth reading through the client newClient makes,
// the one of kubectl's flags when nil.
func newCommand(streams genericiooptions.IOStreams, newClient func() (client.Client, error)) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), streams: streams, newClient: newClient}
	if o.newClient == nil {
		o.newClient, o.pending = o.defaultClient, o.defaultPending
	} else {
		// A test's client: the API is not served unless the test says so.
		o.pending = notServed
	}
	root := &cobra.Command{
		// The name is one word; the help shows the display name, so that
		// it says "kubectl berth why", not "kubectl why".
		Use:          "berth",
		Annotations:  map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl berth"},
		Short:        "Ask Berth where your jobs are, why they wait, and what would happen",
		SilenceUsage: true,
	}
	o.flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&o.output, "output", "o", "table", "Output format: table, json or yaml.")
	root.PersistentFlags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Across every namespace.")
	root.AddCommand(o.positionsCommand(), o.whyCommand(), o.historyCommand(), o.usageCommand(), o.stopCommand(true), o.stopCommand(false), o.whatIfCommand(), o.dashboardCommand(), o.auditCommand(), o.convertCommand())
	return root
}

// Scheme is what the plugin reads: Berth's kinds, the built-in ones and
// JobSets.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, berthv1alpha1.AddToScheme, jobsetapi.AddToScheme, rayv1.AddToScheme, trainer.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

func (o *options) defaultClient() (client.Client, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// namespace is the command's namespace: -n, or the kubeconfig context's.
func (o *options) namespace() (string, error) {
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", err
	}
	if ns == "" {
		ns = corev1.NamespaceDefault
	}
	return ns, nil
}

// prepare is what each command that reads does first: it checks the
// output format, makes the client and finds the command's namespace.
func (o *options) prepare() (client.Client, string, error) {
	if err := o.checkOutput(); err != nil {
		return nil, "", err
	}
	c, err := o.newClient()
	if err != nil {
		return nil, "", err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

func (o *options) checkOutput() error {
	switch o.output {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q: use table, json or yaml", o.output)
}
