// Command berth is Berth's controller manager: the admission engine, the
// reconcilers of Berth's kinds and the job integrations, with their
// webhooks, metrics, health probes and leader election.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/certs"
	"github.com/berth-dev/berth/pkg/config"
	"github.com/berth-dev/berth/pkg/controller"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
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
	"github.com/berth-dev/berth/pkg/multicluster"
	"github.com/berth-dev/berth/pkg/visibility"
)

// version is the release's, set by hack/release.sh (-X main.version).
var version = "devel"

func main() {
	var configFile string
	var deviations controllermanager.Deviations
	flag.StringVar(&configFile, "config", "", "Path to the controller's configuration file (config.berth.dev/v1alpha1 Configuration); empty for the defaults.")
	flag.BoolVar(&deviations.Stock, "stock", false, "Run as stock controller-runtime and client-go do, without Berth's deviations from them (see operations.md), to bisect a regression after upgrading either.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(deviations.Logger(zap.New(zap.UseFlagOptions(&opts))))
	deviations.SetProcs(os.Getenv)
	ctrl.Log.Info("Starting Berth", "version", version)

	if err := run(configFile, deviations); err != nil {
		ctrl.Log.Error(err, "Berth stopped")
		os.Exit(1)
	}
}

// softLimit is how the log shows Go's soft memory limit: "none", or a
// quantity.
func softLimit(bytes int64) string {
	if bytes == math.MaxInt64 {
		return "none"
	}
	return resource.NewQuantity(bytes, resource.BinarySI).String()
}

func run(configFile string, deviations controllermanager.Deviations) error {
	memoryLimit, err := deviations.SetMemoryLimit(os.Getenv)
	if err != nil {
		return err
	}
	cfg, err := config.Load(configFile)
	if err != nil {
		return err
	}
	if err := metrics.Configure(cfg.Metrics); err != nil {
		return err
	}
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := controllermanager.AddToScheme(scheme, cfg.Integrations.Frameworks); err != nil {
		return err
	}
	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS, restConfig.Burst = cfg.ClientConnection.QPS, int(cfg.ClientConnection.Burst)

	var certsMgr *certs.Manager
	var tlsOpts []func(*tls.Config)
	if ptr.Deref(cfg.InternalCertManagement.Enable, true) {
		certsMgr = certs.New(certs.OptionsFrom(cfg))
		tlsOpts = append(tlsOpts, certsMgr.TLSOpt)
	}
	opts, err := managerOptions(cfg, deviations, restConfig, scheme, tlsOpts)
	if err != nil {
		return err
	}
	var fence *controllermanager.Fence
	if opts.LeaderElection {
		// Only the leader writes Workloads, queues and jobs, and only while
		// its lease is surely its own.
		fence = controllermanager.NewFence(*opts.LeaseDuration)
		if opts.LeaderElectionResourceLockInterface, err = fence.NewLeaseLock(restConfig, opts.LeaderElectionNamespace, opts.LeaderElectionID, *opts.RenewDeadline); err != nil {
			return err
		}
		if err := fence.Install(restConfig); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		return err
	}
	if err := addProbes(mgr, certsMgr); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	cmOpts := controllerOptions(cfg, deviations)
	if cmOpts.Visibility, err = visibilityOptions(cfg, certsMgr); err != nil {
		return err
	}
	if err := controllermanager.Setup(ctx, mgr, cmOpts); err != nil {
		return err
	}
	ctrl.Log.Info("Starting Berth", "integrations", cfg.Integrations.Frameworks, "procs", runtime.GOMAXPROCS(0), "softMemoryLimit", softLimit(memoryLimit), "stock", deviations.Stock)
	err = mgr.Start(ctx)
	if fence != nil {
		refused, late := fence.Counts()
		ctrl.Log.Info("The leader's writes past its lease", "refused", refused, "writtenLate", late)
	}
	return err
}

func managerOptions(cfg *configv1alpha1.Configuration, deviations controllermanager.Deviations, restConfig *rest.Config, scheme *k8sruntime.Scheme, tlsOpts []func(*tls.Config)) (ctrl.Options, error) {
	cacheOpts, err := deviations.CacheOptions(restConfig, scheme, controllermanager.Scope{
		ValidatingWebhookConfiguration: cfg.InternalCertManagement.ValidatingWebhookConfigurationName,
		MutatingWebhookConfiguration:   cfg.InternalCertManagement.MutatingWebhookConfigurationName,
		APIService:                     certs.OptionsFrom(cfg).APIServiceName,
	})
	if err != nil {
		return ctrl.Options{}, err
	}
	return ctrl.Options{
		Scheme:                  scheme,
		Cache:                   cacheOpts,
		MapperProvider:          deviations.MapperProvider(),
		Controller:              deviations.ControllerDefaults(),
		Metrics:                 controllermanager.MetricsOptions(cfg.Metrics),
		HealthProbeBindAddress:  cfg.Health.HealthProbeBindAddress,
		PprofBindAddress:        cfg.PprofBindAddress,
		LeaderElection:          ptr.Deref(cfg.LeaderElection.LeaderElect, true),
		LeaderElectionID:        cfg.LeaderElection.ResourceName,
		LeaderElectionNamespace: cfg.LeaderElection.ResourceNamespace,
		LeaseDuration:           durationOf(cfg.LeaderElection.LeaseDuration),
		RenewDeadline:           durationOf(cfg.LeaderElection.RenewDeadline),
		RetryPeriod:             durationOf(cfg.LeaderElection.RetryPeriod),
		// A new leader must not run a cycle on the old leader's heels.
		LeaderElectionReleaseOnCancel: false,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    cfg.Webhook.Host,
			Port:    int(cfg.Webhook.Port),
			CertDir: cfg.Webhook.CertDir,
			TLSOpts: tlsOpts,
		}),
	}, nil
}

// durationOf is d as controller-runtime takes it: nil for its default.
func durationOf(d *metav1.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	return &d.Duration
}

func addProbes(mgr ctrl.Manager, certsMgr *certs.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if certsMgr == nil {
		return mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker())
	}
	if err := certsMgr.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up webhook certificates: %w", err)
	}
	return mgr.AddReadyzCheck("webhook-certs", certsMgr.Checker())
}

// visibilityOptions turns the visibility API on unless its bind address is
// "0"; with internal certificate management it serves certsMgr's
// certificate.
func visibilityOptions(cfg *configv1alpha1.Configuration, certsMgr *certs.Manager) (*controllermanager.VisibilityOptions, error) {
	v := cfg.Visibility
	if v.BindAddress == "0" {
		return nil, nil
	}
	addr, err := visibility.AdvertiseAddress(v.AdvertiseAddress)
	if err != nil {
		return nil, err
	}
	opts := &controllermanager.VisibilityOptions{
		BindAddress: v.BindAddress, Namespace: cfg.InternalCertManagement.WebhookServiceNamespace, Service: v.ServiceName,
		AdvertiseAddress: addr, CertDir: cfg.Webhook.CertDir,
	}
	if certsMgr != nil {
		opts.GetCertificate = certsMgr.GetCertificate
	}
	return opts, nil
}

func controllerOptions(cfg *configv1alpha1.Configuration, deviations controllermanager.Deviations) controllermanager.Options {
	opts := controllermanager.Options{
		Controllers: controller.Options{WorkloadConcurrency: 4},
		Jobs: jobframework.Options{
			ManageJobsWithoutQueueName: cfg.ManageJobsWithoutQueueName,
			DefaultSchedulerName:       cfg.DefaultSchedulerName,
		},
		Integrations: cfg.Integrations.Frameworks,
		Deviations:   deviations,
		MultiCluster: multicluster.Options{
			Namespace: cfg.InternalCertManagement.WebhookServiceNamespace,
			Origin:    cfg.MultiCluster.Origin, WorkerLostTimeout: cfg.MultiCluster.WorkerLostTimeout.Duration,
		},
		FairSharing: cfg.FairSharing != nil && cfg.FairSharing.Enable,
		// Defaulted before: the delay is set.
		PreemptionDelay: cfg.Preemption.Delay.Duration,
	}
	if opts.FairSharing {
		opts.FairStrategies = cfg.FairSharing.PreemptionStrategies
	}
	if afs := cfg.AdmissionFairSharing; afs != nil {
		// Defaulted before: both durations are set.
		opts.AdmissionFairSharing = &queue.AdmissionFairSharing{
			HalfLife: afs.UsageHalfLifeTime.Duration, Interval: afs.UsageSamplingInterval.Duration, ResourceWeights: afs.ResourceWeights,
		}
	}
	if cfg.ManagedJobsNamespaceSelector != nil {
		// Validated before: it parses.
		opts.Jobs.ManagedNamespaces, _ = metav1.LabelSelectorAsSelector(cfg.ManagedJobsNamespaceSelector)
	}
	if po := cfg.Integrations.PodOptions; po != nil && po.NamespaceSelector != nil {
		// Validated before: it parses.
		opts.Jobs.PodNamespaces, _ = metav1.LabelSelectorAsSelector(po.NamespaceSelector)
	}
	rs := cfg.WaitForPodsReady.RequeuingStrategy
	if w := cfg.WaitForPodsReady; w.Enable && w.Timeout != nil {
		opts.Controllers.PodsReadyTimeout = w.Timeout.Duration
		if w.RecoveryTimeout != nil {
			opts.Controllers.RecoveryTimeout = w.RecoveryTimeout.Duration
		}
		opts.BlockAdmission = ptr.Deref(w.BlockAdmission, false)
		opts.Ordering.PodsReadyByCreation = ptr.Deref(rs.Timestamp, configv1alpha1.EvictionTimestamp) == configv1alpha1.CreationTimestamp
	}
	backoff := workload.Backoff{
		Base:  time.Duration(ptr.Deref(rs.BackoffBaseSeconds, 0)) * time.Second,
		Max:   time.Duration(ptr.Deref(rs.BackoffMaxSeconds, 0)) * time.Second,
		Limit: rs.BackoffLimitCount,
	}
	opts.Controllers.Backoff, opts.Jobs.Backoff = backoff, backoff
	if nf := cfg.NodeFailures; ptr.Deref(nf.Enable, true) && nf.GracePeriod != nil {
		// A grace period of 0 evicts as soon as a failure is seen.
		opts.Controllers.NodeFailureGrace = max(nf.GracePeriod.Duration, time.Nanosecond)
	}
	if d := cfg.ObjectRetentionPolicies.Workloads.AfterFinished; d != nil {
		opts.Controllers.Retention.AfterFinished = &d.Duration
	}
	if d := cfg.ObjectRetentionPolicies.Workloads.AfterDeactivatedByBerth; d != nil {
		opts.Controllers.Retention.AfterDeactivated = &d.Duration
	}
	return opts
}
