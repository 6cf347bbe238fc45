package config

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// DefaultFrameworks returns the frameworks managed when the configuration
// names none.
func DefaultFrameworks() []string {
	return []string{configv1alpha1.FrameworkBatchJob, configv1alpha1.FrameworkJobSet, configv1alpha1.FrameworkPod, configv1alpha1.FrameworkDeployment,
		configv1alpha1.FrameworkStatefulSet, configv1alpha1.FrameworkLeaderWorkerSet}
}

// optInFrameworks are the frameworks managed only when the configuration
// names them: their CRDs come with another operator.
var optInFrameworks = []string{configv1alpha1.FrameworkRayJob, configv1alpha1.FrameworkRayCluster, configv1alpha1.FrameworkTrainJob}

// DefaultManagedNamespaceSelector selects every namespace but kube-system and
// berth-system.
func DefaultManagedNamespaceSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key:      corev1.LabelMetadataName,
		Operator: metav1.LabelSelectorOpNotIn,
		Values:   []string{configv1alpha1.KubeSystemNamespace, configv1alpha1.DefaultNamespace},
	}}}
}

// SetDefaults fills every unset field of cfg with its default. It is
// idempotent.
func SetDefaults(cfg *configv1alpha1.Configuration) {
	if cfg.APIVersion == "" {
		cfg.APIVersion = configv1alpha1.GroupVersion.String()
	}
	if cfg.Kind == "" {
		cfg.Kind = configv1alpha1.Kind
	}
	setClientConnectionDefaults(&cfg.ClientConnection)
	setLeaderElectionDefaults(&cfg.LeaderElection)
	setString(&cfg.Health.HealthProbeBindAddress, configv1alpha1.DefaultHealthProbeBindAddress)
	if cfg.Metrics.SecureServing == nil {
		cfg.Metrics.SecureServing = ptr.To(true)
	}
	if *cfg.Metrics.SecureServing {
		setString(&cfg.Metrics.BindAddress, configv1alpha1.DefaultMetricsBindAddress)
	} else {
		setString(&cfg.Metrics.BindAddress, configv1alpha1.DefaultInsecureMetricsBindAddress)
	}
	if cfg.Metrics.EnableLocalQueueMetrics == nil {
		cfg.Metrics.EnableLocalQueueMetrics = ptr.To(true)
	}
	for i := range cfg.Metrics.CustomLabels {
		setString(&cfg.Metrics.CustomLabels[i].SourceLabelKey, cfg.Metrics.CustomLabels[i].Name)
	}
	setWebhookDefaults(&cfg.Webhook)
	setString(&cfg.Visibility.BindAddress, configv1alpha1.DefaultVisibilityBindAddress)
	setString(&cfg.Visibility.ServiceName, configv1alpha1.DefaultVisibilityServiceName)
	setInternalCertManagementDefaults(&cfg.InternalCertManagement)
	// nil, not empty: an explicit empty list means "manage no framework".
	if cfg.Integrations.Frameworks == nil {
		cfg.Integrations.Frameworks = DefaultFrameworks()
	}
	if cfg.Integrations.PodOptions == nil {
		cfg.Integrations.PodOptions = &configv1alpha1.PodIntegrationOptions{}
	}
	if cfg.ManagedJobsNamespaceSelector == nil {
		cfg.ManagedJobsNamespaceSelector = DefaultManagedNamespaceSelector()
	}
	if cfg.Integrations.PodOptions.NamespaceSelector == nil {
		cfg.Integrations.PodOptions.NamespaceSelector = cfg.ManagedJobsNamespaceSelector.DeepCopy()
	}
	if fs := cfg.FairSharing; fs != nil && fs.PreemptionStrategies == nil {
		fs.PreemptionStrategies = []configv1alpha1.PreemptionStrategy{configv1alpha1.LessThanOrEqualToFinalShare, configv1alpha1.LessThanInitialShare}
	}
	if afs := cfg.AdmissionFairSharing; afs != nil {
		setDuration(&afs.UsageHalfLifeTime, configv1alpha1.DefaultUsageHalfLifeTime)
		setDuration(&afs.UsageSamplingInterval, configv1alpha1.DefaultUsageSamplingInterval)
	}
	setDuration(&cfg.Preemption.Delay, configv1alpha1.DefaultPreemptionDelay)
	if cfg.NodeFailures.Enable == nil {
		cfg.NodeFailures.Enable = ptr.To(true)
	}
	setDuration(&cfg.NodeFailures.GracePeriod, configv1alpha1.DefaultNodeFailureGracePeriod)
	if cfg.MultiCluster.Origin == "" {
		cfg.MultiCluster.Origin = configv1alpha1.DefaultMultiClusterOrigin
	}
	setDuration(&cfg.MultiCluster.WorkerLostTimeout, configv1alpha1.DefaultWorkerLostTimeout)
	setDuration(&cfg.WaitForPodsReady.Timeout, configv1alpha1.DefaultWaitForPodsReadyTimeout)
	if cfg.WaitForPodsReady.BlockAdmission == nil {
		cfg.WaitForPodsReady.BlockAdmission = ptr.To(false)
	}
	rs := &cfg.WaitForPodsReady.RequeuingStrategy
	if rs.Timestamp == nil {
		rs.Timestamp = ptr.To(configv1alpha1.EvictionTimestamp)
	}
	if rs.BackoffBaseSeconds == nil {
		rs.BackoffBaseSeconds = ptr.To[int32](configv1alpha1.DefaultBackoffBaseSeconds)
	}
	if rs.BackoffMaxSeconds == nil {
		rs.BackoffMaxSeconds = ptr.To[int32](configv1alpha1.DefaultBackoffMaxSeconds)
	}
}

func setClientConnectionDefaults(c *configv1alpha1.ClientConnection) {
	if c.QPS == 0 {
		c.QPS = configv1alpha1.DefaultQPS
	}
	if c.Burst == 0 {
		c.Burst = configv1alpha1.DefaultBurst
	}
}

func setLeaderElectionDefaults(le *configv1alpha1.LeaderElection) {
	if le.LeaderElect == nil {
		le.LeaderElect = ptr.To(true)
	}
	setString(&le.ResourceName, configv1alpha1.DefaultLeaderElectionResourceName)
	setString(&le.ResourceNamespace, configv1alpha1.DefaultNamespace)
	setDuration(&le.LeaseDuration, configv1alpha1.DefaultLeaseDuration)
	setDuration(&le.RenewDeadline, configv1alpha1.DefaultRenewDeadline)
	setDuration(&le.RetryPeriod, configv1alpha1.DefaultRetryPeriod)
}

func setDuration(d **metav1.Duration, def time.Duration) {
	if *d == nil {
		*d = &metav1.Duration{Duration: def}
	}
}

func setWebhookDefaults(w *configv1alpha1.Webhook) {
	if w.Port == 0 {
		w.Port = configv1alpha1.DefaultWebhookPort
	}
	setString(&w.CertDir, configv1alpha1.DefaultWebhookCertDir)
}

func setInternalCertManagementDefaults(icm *configv1alpha1.InternalCertManagement) {
	if icm.Enable == nil {
		icm.Enable = ptr.To(true)
	}
	setString(&icm.WebhookServiceName, configv1alpha1.DefaultWebhookServiceName)
	setString(&icm.WebhookServiceNamespace, configv1alpha1.DefaultNamespace)
	setString(&icm.WebhookSecretName, configv1alpha1.DefaultWebhookSecretName)
	setString(&icm.ValidatingWebhookConfigurationName, configv1alpha1.DefaultValidatingWebhookConfigurationName)
	setString(&icm.MutatingWebhookConfigurationName, configv1alpha1.DefaultMutatingWebhookConfigurationName)
}

func setString(s *string, def string) {
	if *s == "" {
		*s = def
	}
}
