package v1alpha1

import "time"

// Kind is the kind of a configuration file.
const Kind = "Configuration"

// The job frameworks Berth can manage, as named in Integrations.Frameworks.
const (
	FrameworkBatchJob   = "batch/job"
	FrameworkJobSet     = "jobset.x-k8s.io/jobset"
	FrameworkPod        = "pod"
	FrameworkDeployment = "deployment"
	// FrameworkStatefulSet needs FrameworkPod, as FrameworkDeployment does.
	FrameworkStatefulSet = "statefulset"
	// FrameworkLeaderWorkerSet (sigs.k8s.io/lws) needs FrameworkPod.
	FrameworkLeaderWorkerSet = "leaderworkerset.x-k8s.io/leaderworkerset"
	// FrameworkRayJob (KubeRay's ray.io RayJob) is never enabled by
	// default: its CRDs come with KubeRay.
	FrameworkRayJob = "ray.io/rayjob"
	// FrameworkRayCluster (KubeRay's ray.io RayCluster) is never enabled
	// by default either. With FrameworkRayJob, the cluster of a RayJob
	// Berth holds runs on the RayJob's quota.
	FrameworkRayCluster = "ray.io/raycluster"
	// FrameworkTrainJob (Kubeflow Trainer's trainer.kubeflow.org
	// TrainJob) is never enabled by default: its CRDs come with Trainer.
	// Its JobSet runs on the TrainJob's quota.
	FrameworkTrainJob = "trainer.kubeflow.org/trainjob"
)

// KubeSystemNamespace is the namespace of the cluster's own components,
// whose pods Berth never holds by default.
const KubeSystemNamespace = "kube-system"

// Default values of the Configuration's fields; see each field's comment
// for why.
const (
	DefaultQPS                        = 500
	DefaultBurst                      = 1000
	DefaultLeaderElectionResourceName = "berth.dev"
	DefaultNamespace                  = "berth-system"
	DefaultHealthProbeBindAddress     = ":8081"
	DefaultMetricsBindAddress         = ":8443"
	DefaultInsecureMetricsBindAddress = ":8080"
	DefaultWebhookPort                = 9443
	DefaultWebhookCertDir             = "/tmp/berth-webhook-certs"
	DefaultWebhookServiceName         = "berth-webhook-service"
	DefaultVisibilityBindAddress      = ":8444"
	DefaultVisibilityServiceName      = "berth-visibility"
	// VisibilityAPIServiceName is the APIService of visibility.berth.dev.
	VisibilityAPIServiceName                  = "v1alpha1.visibility.berth.dev"
	DefaultWebhookSecretName                  = "berth-webhook-server-cert"
	DefaultValidatingWebhookConfigurationName = "berth-validating-webhook-configuration"
	DefaultMutatingWebhookConfigurationName   = "berth-mutating-webhook-configuration"
	DefaultWaitForPodsReadyTimeout            = 5 * time.Minute
	DefaultPreemptionDelay                    = 5 * time.Second
	DefaultNodeFailureGracePeriod             = time.Minute
	DefaultMultiClusterOrigin                 = "berth"
	DefaultWorkerLostTimeout                  = 15 * time.Minute
	DefaultBackoffBaseSeconds                 = 60
	DefaultBackoffMaxSeconds                  = 3600
	DefaultUsageHalfLifeTime                  = 168 * time.Hour
	DefaultUsageSamplingInterval              = 5 * time.Minute
	// The leader election's timing, client-go's and Kueue's too.
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)
