package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	berthconfig "github.com/berth-dev/berth/pkg/config"
	"github.com/berth-dev/berth/pkg/controller"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/jobframework"
	_ "github.com/berth-dev/berth/pkg/jobs/deployment"
	_ "github.com/berth-dev/berth/pkg/jobs/job"
	_ "github.com/berth-dev/berth/pkg/jobs/jobset"
	_ "github.com/berth-dev/berth/pkg/jobs/leaderworkerset"
	_ "github.com/berth-dev/berth/pkg/jobs/pod"
	_ "github.com/berth-dev/berth/pkg/jobs/raycluster"
	_ "github.com/berth-dev/berth/pkg/jobs/rayjob"
	_ "github.com/berth-dev/berth/pkg/jobs/statefulset"
	_ "github.com/berth-dev/berth/pkg/jobs/trainjob"
	"github.com/berth-dev/berth/pkg/metrics"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/test/util/apiserver"
)

var (
	server *apiserver.Server
	// stopManager stops the running controller manager.
	stopManager func()
)

var integrations = []string{"batch/job", "jobset.x-k8s.io/jobset", "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset", "ray.io/rayjob", "ray.io/raycluster", "trainer.kubeflow.org/trainjob"}

func TestMain(m *testing.M) {
	if os.Getenv("BERTH_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(-5))))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	jobset, err := apiserver.ModuleDir("sigs.k8s.io/jobset")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The LeaderWorkerSet release the local cluster runs.
	lws, err := apiserver.ToolModuleDir("operators", "sigs.k8s.io/lws")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ray, err := apiserver.ModuleDir("github.com/ray-project/kuberay/ray-operator")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	trainerMod, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Every queue series carries a team label, from the queue's own.
	if err := metrics.Configure(configv1alpha1.Metrics{CustomLabels: []configv1alpha1.MetricLabel{{Name: teamLabel}}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(apiserver.RunSuite(m, &server,
		func() (func(), error) { return func() { stopManager() }, startManager() },
		apiserver.WithCRDs(filepath.Join(jobset, "config", "components", "crd", "bases"), filepath.Join(lws, "config", "crd", "bases"),
			filepath.Join(ray, "config", "crd", "bases"), filepath.Join(trainerMod, "manifests", "base", "crds")),
		apiserver.WithWebhooks(filepath.Join(apiserver.RepoRoot(), "config", "webhook")),
		apiserver.WithOwnerReferencesPermissionEnforcement()))
}

// startManager runs a new controller manager, as a new process of Berth
// would: empty caches, every object loaded from the API server. It runs
// with the permissions of config/rbac/role.yaml and no others. tune
// changes the default options, for a test that needs others.
func startManager(tune ...func(*controllermanager.Options)) error {
	stop, err := runManager(server, webhook.Options{
		Host:    server.Webhook.LocalServingHost,
		Port:    server.Webhook.LocalServingPort,
		CertDir: server.Webhook.LocalServingCertDir,
	}, tune...)
	if err != nil {
		return err
	}
	stopManager = stop
	return waitForWebhook(server.Client)
}

// runManager runs a controller manager of Berth against s, with the
// permissions of config/rbac/role.yaml, and returns what stops it. Its
// webhook server serves as hooks says; only the suite's server calls it.
func runManager(s *apiserver.Server, hooks webhook.Options, tune ...func(*controllermanager.Options)) (func(), error) {
	cfg, err := s.ControllerConfig(context.Background())
	if err != nil {
		return nil, err
	}
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := controllermanager.AddToScheme(scheme, integrations); err != nil {
		return nil, err
	}
	cacheOpts, err := controllermanager.Deviations{}.CacheOptions(cfg, scheme, controllermanager.Scope{})
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		MapperProvider:         controllermanager.Deviations{}.MapperProvider(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(hooks),
		Controller:             ctrlConfig(),
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	podNamespaces, err := metav1.LabelSelectorAsSelector(berthconfig.DefaultManagedNamespaceSelector())
	if err != nil {
		cancel()
		return nil, err
	}
	opts := controllermanager.Options{
		Controllers:  controller.Options{WorkloadConcurrency: 4},
		Jobs:         jobframework.Options{PodNamespaces: podNamespaces, ManagedNamespaces: podNamespaces},
		Integrations: integrations,
	}
	for _, t := range tune {
		t(&opts)
	}
	err = controllermanager.Setup(ctx, mgr, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// ctrlConfig is Berth's controller configuration, with name validation off:
// a restarted manager registers the same controller names again.
func ctrlConfig() config.Controller {
	c := controllermanager.Deviations{}.ControllerDefaults()
	c.SkipNameValidation = ptr.To(true)
	return c
}

// waitForWebhook waits until the API server reaches the Job webhook: a
// dry-run of a queued Job comes back suspended.
func waitForWebhook(c client.Client) error {
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		job := utiltesting.MakeJob("webhook-probe", "default").Queue("probe").Obj()
		if err := c.Create(ctx, job, client.DryRunAll); err != nil {
			return false, nil
		}
		return ptr.Deref(job.Spec.Suspend, false), nil
	})
}

// withManager runs the rest of the test against a manager tuned by tune,
// and restores the default manager at its end.
func withManager(t testing.TB, tune func(*controllermanager.Options)) {
	t.Helper()
	stopManager()
	if err := startManager(tune); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopManager()
		if err := startManager(); err != nil {
			t.Errorf("restoring the default manager: %v", err)
		}
	})
}
