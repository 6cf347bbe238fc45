package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	autoscalingv1 "github.com/berth-dev/berth/apis/autoscaling/v1"
	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Server is a running kube-apiserver with Berth's CRDs installed.
type Server struct {
	// Config reaches the server as an administrator.
	Config *rest.Config
	// Client is a controller-runtime client for Berth's and the built-in kinds.
	Client client.Client
	// Kubeconfig is the path of an administrator's kubeconfig file.
	Kubeconfig string
	// Version is the server's version, e.g. v1.37.2.
	Version string
	// Webhook is where the API server calls webhooks installed with
	// WithWebhooks: LocalServingHost, LocalServingPort, LocalServingCertDir.
	Webhook *envtest.WebhookInstallOptions

	env *envtest.Environment
	dir string
}

// RepoRoot is the root of the Berth repository: the directory above the
// working directory (a test's package, or where go run was called) whose
// go.mod is Berth's. Not the source file's path, which -trimpath hides.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(mod), "module github.com/berth-dev/berth\n") {
			return d
		}
		if filepath.Dir(d) == d {
			panic("no Berth go.mod above " + dir)
		}
	}
}

// AssetsDir is where etcd, kube-apiserver and kubectl are: KUBEBUILDER_ASSETS
// when set, bin/k8s otherwise.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin", "k8s")
}

// Option adds to what Start installs.
type Option func(*envtest.Environment) error

// WithCRDs installs the CRDs found in paths too.
func WithCRDs(paths ...string) Option {
	return func(env *envtest.Environment) error {
		env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, paths...)
		return nil
	}
}

// WithWebhooks installs the webhook configurations that the kustomization
// in dir renders (selectors and all, as an install would have them),
// pointed at a local webhook server whose address and certificates are in
// Server.Webhook.
func WithWebhooks(dir string) Option {
	return func(env *envtest.Environment) error {
		mutating, validating, err := renderWebhooks(dir)
		if err != nil {
			return err
		}
		env.WebhookInstallOptions.MutatingWebhooks = append(env.WebhookInstallOptions.MutatingWebhooks, mutating...)
		env.WebhookInstallOptions.ValidatingWebhooks = append(env.WebhookInstallOptions.ValidatingWebhooks, validating...)
		return nil
	}
}

// renderWebhooks builds the kustomization in dir and keeps its webhook
// configurations.
func renderWebhooks(dir string) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering the webhooks of %s: %w", dir, err)
	}
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, r := range resources.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			return nil, nil, err
		}
		switch r.GetKind() {
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(doc, c)
			mutating = append(mutating, c)
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(doc, c)
			validating = append(validating, c)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s %s: %w", r.GetKind(), r.GetName(), err)
		}
	}
	return mutating, validating, nil
}

// WithOwnerReferencesPermissionEnforcement runs the API server as clusters
// that enforce who may block an owner's deletion do: setting
// blockOwnerDeletion on an owner reference takes permission to update the
// owner's finalizers.
func WithOwnerReferencesPermissionEnforcement() Option {
	return func(env *envtest.Environment) error {
		env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
		return nil
	}
}

// Start starts etcd and kube-apiserver and installs Berth's CRDs and
// validation policies, plus what opts add.
func Start(opts ...Option) (*Server, error) {
	assets := AssetsDir()
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s; run `make toolchain`: %w", assets, err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths: []string{
			filepath.Join(RepoRoot(), "config", "crd", "bases"),
			// What cluster-autoscaler installs: Berth's admission checks
			// create ProvisioningRequests.
			filepath.Join(RepoRoot(), "config", "components", "provisioningrequest"),
		},
		ErrorIfCRDPathMissing: true,
	}
	for _, opt := range opts {
		if err := opt(env); err != nil {
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		// A failed start (e.g. a CRD the server refuses) can leave etcd and
		// the API server running.
		return nil, errors.Join(fmt.Errorf("starting the API server: %w", err), env.Stop())
	}
	// client-go's default of 5 requests a second would make the tests
	// wait on the client rather than on the system under test.
	cfg.QPS, cfg.Burst = 1000, 2000
	s := &Server{Config: cfg, env: env, Webhook: &env.WebhookInstallOptions}
	if err := s.init(); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

func (s *Server) init() error {
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	if s.Client, err = client.New(s.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		return err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return err
	}
	s.Version = info.GitVersion
	if err := s.installPolicies(context.Background()); err != nil {
		return err
	}
	return s.writeKubeconfig()
}

func (s *Server) writeKubeconfig() error {
	user, err := s.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if s.dir, err = os.MkdirTemp("", "berth-apiserver-"); err != nil {
		return err
	}
	s.Kubeconfig = filepath.Join(s.dir, "kubeconfig")
	return os.WriteFile(s.Kubeconfig, data, 0o600)
}

// Stop stops the API server and etcd and removes their data.
func (s *Server) Stop() error {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
	return s.env.Stop()
}

// Kubectl runs the real kubectl against the server and returns its
// standard output and standard error.
func (s *Server) Kubectl(ctx context.Context, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(AssetsDir(), "kubectl"), append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// Scheme knows the built-in kinds, Berth's, JobSet's, KubeRay's and the
// ProvisioningRequest.
func Scheme() (*k8sruntime.Scheme, error) {
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := berthv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	for _, add := range []func(*k8sruntime.Scheme) error{jobsetapi.AddToScheme, rayv1.AddToScheme, trainer.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// ModuleDir is where the Go module path, a dependency of Berth, is in the
// module cache: the tests install CRDs that dependencies ship. It downloads
// the module first, as a fresh machine has nothing in its module cache that
// a build did not need.
func ModuleDir(path string) (string, error) { return moduleDir(RepoRoot(), path) }

// ToolModuleDir is ModuleDir for a module that the tool module
// hack/tools/<tool> requires, such as the controller of a job framework
// that Berth's own code does not import.
func ToolModuleDir(tool, path string) (string, error) {
	return moduleDir(filepath.Join(RepoRoot(), "hack", "tools", tool), path)
}

func moduleDir(dir, path string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", path)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &mod); err != nil || jsonErr != nil || mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("downloading module %s: %s %s: %w", path, mod.Error, strings.TrimSpace(stderr.String()), errors.Join(err, jsonErr))
	}
	return mod.Dir, nil
}
