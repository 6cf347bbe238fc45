package config

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		change func(*configv1alpha1.Configuration)
		// wantFields are the fields reported, with their error type.
		wantFields []string
	}{
		"defaults are valid": {
			change: func(*configv1alpha1.Configuration) {},
		},
		"wrong apiVersion and kind": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.APIVersion = "berth.dev/v1alpha1"
				cfg.Kind = "ClusterQueue"
			},
			wantFields: []string{"FieldValueNotSupported apiVersion", "FieldValueNotSupported kind"},
		},
		"custom metric labels that Prometheus or Berth's series refuse": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Metrics.CustomLabels = []configv1alpha1.MetricLabel{
					{Name: "team", SourceLabelKey: "team"}, {Name: "team"}, {Name: "cluster_queue"}, {Name: "2fast"}, {Name: "__x"},
					{Name: "cost", SourceLabelKey: "not a key"},
				}
			},
			wantFields: []string{"FieldValueDuplicate metrics.customLabels[1].name", "FieldValueInvalid metrics.customLabels[2].name",
				"FieldValueInvalid metrics.customLabels[3].name", "FieldValueInvalid metrics.customLabels[4].name",
				"FieldValueInvalid metrics.customLabels[5].sourceLabelKey"},
		},
		"too many custom metric labels": {
			change: func(cfg *configv1alpha1.Configuration) {
				for i := range 9 {
					cfg.Metrics.CustomLabels = append(cfg.Metrics.CustomLabels, configv1alpha1.MetricLabel{Name: fmt.Sprintf("l%d", i)})
				}
			},
			wantFields: []string{"FieldValueTooMany metrics.customLabels"},
		},
		"negative qps": {
			change:     func(cfg *configv1alpha1.Configuration) { cfg.ClientConnection.QPS = -1 },
			wantFields: []string{"FieldValueInvalid clientConnection.qps"},
		},
		"burst below qps": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.ClientConnection.QPS = 100
				cfg.ClientConnection.Burst = 50
			},
			wantFields: []string{"FieldValueInvalid clientConnection.burst"},
		},
		"burst equal to qps": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.ClientConnection.QPS = 100
				cfg.ClientConnection.Burst = 100
			},
		},
		"bad lease name and namespace": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.LeaderElection.ResourceName = "Berth"
				cfg.LeaderElection.ResourceNamespace = "berth.system"
			},
			wantFields: []string{"FieldValueInvalid leaderElection.resourceName", "FieldValueInvalid leaderElection.resourceNamespace"},
		},
		"shorter lease timing that client-go takes": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.LeaderElection.LeaseDuration = &metav1.Duration{Duration: 4 * time.Second}
				cfg.LeaderElection.RenewDeadline = &metav1.Duration{Duration: 3 * time.Second}
				cfg.LeaderElection.RetryPeriod = &metav1.Duration{Duration: time.Second}
			},
		},
		"a lease timing of zero": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.LeaderElection.LeaseDuration = &metav1.Duration{}
				cfg.LeaderElection.RetryPeriod = &metav1.Duration{Duration: -time.Second}
			},
			wantFields: []string{"FieldValueInvalid leaderElection.leaseDuration", "FieldValueInvalid leaderElection.retryPeriod"},
		},
		"a renew deadline as long as the lease": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.LeaderElection.RenewDeadline = &metav1.Duration{Duration: 15 * time.Second}
			},
			wantFields: []string{"FieldValueInvalid leaderElection.renewDeadline"},
		},
		"a renew deadline with no room for a retry's jitter": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.LeaderElection.RenewDeadline = &metav1.Duration{Duration: 12 * time.Second}
				cfg.LeaderElection.RetryPeriod = &metav1.Duration{Duration: 10 * time.Second}
				cfg.LeaderElection.LeaseDuration = &metav1.Duration{Duration: 20 * time.Second}
			},
			wantFields: []string{"FieldValueInvalid leaderElection.renewDeadline"},
		},
		"lease names are not checked without leader election": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.LeaderElection.LeaderElect = ptr.To(false)
				cfg.LeaderElection.ResourceName = "Berth"
			},
		},
		"endpoints turned off": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Health.HealthProbeBindAddress = "0"
				cfg.Metrics.BindAddress = "0"
			},
		},
		"endpoints with a host": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Health.HealthProbeBindAddress = "127.0.0.1:8081"
				cfg.Metrics.BindAddress = "[::1]:8080"
			},
		},
		"bad bind addresses": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Health.HealthProbeBindAddress = "8081"
				cfg.Metrics.BindAddress = ":http"
			},
			wantFields: []string{"FieldValueInvalid health.healthProbeBindAddress", "FieldValueInvalid metrics.bindAddress"},
		},
		"bad visibility settings": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Visibility.BindAddress = "8444"
				cfg.Visibility.ServiceName = "1-visibility"
				cfg.Visibility.AdvertiseAddress = "127.0.0.1"
			},
			wantFields: []string{"FieldValueInvalid visibility.bindAddress", "FieldValueInvalid visibility.serviceName", "FieldValueInvalid visibility.advertiseAddress"},
		},
		"the visibility API off, advertised at a host's address": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Visibility.BindAddress = "0"
				cfg.Visibility.AdvertiseAddress = "10.0.0.7"
			},
		},
		"bad webhook port": {
			change:     func(cfg *configv1alpha1.Configuration) { cfg.Webhook.Port = 70000 },
			wantFields: []string{"FieldValueInvalid webhook.port"},
		},
		"bad certificate settings": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.InternalCertManagement.WebhookServiceName = "1-service"
				cfg.InternalCertManagement.WebhookServiceNamespace = ""
				cfg.InternalCertManagement.WebhookSecretName = "Secret"
				cfg.InternalCertManagement.ExtraIPs = []string{"127.0.0.1", "::1", "localhost"}
				cfg.InternalCertManagement.ValidatingWebhookConfigurationName = "a_b"
				cfg.InternalCertManagement.MutatingWebhookConfigurationName = "-"
			},
			wantFields: []string{
				"FieldValueInvalid internalCertManagement.webhookServiceName",
				"FieldValueInvalid internalCertManagement.webhookServiceNamespace",
				"FieldValueInvalid internalCertManagement.webhookSecretName",
				"FieldValueInvalid internalCertManagement.extraIPs[2]",
				"FieldValueInvalid internalCertManagement.validatingWebhookConfigurationName",
				"FieldValueInvalid internalCertManagement.mutatingWebhookConfigurationName",
			},
		},
		"certificate settings are not checked when off": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.InternalCertManagement.Enable = ptr.To(false)
				cfg.InternalCertManagement.ExtraIPs = []string{"localhost"}
			},
		},
		"bad default scheduler name": {
			change:     func(cfg *configv1alpha1.Configuration) { cfg.DefaultSchedulerName = "GPU scheduler" },
			wantFields: []string{"FieldValueInvalid defaultSchedulerName"},
		},
		"unknown and duplicate frameworks": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Integrations.Frameworks = []string{"batch/job", "kubeflow.org/pytorchjob", "batch/job"}
			},
			wantFields: []string{"FieldValueNotSupported integrations.frameworks[1]", "FieldValueDuplicate integrations.frameworks[2]"},
		},
		"unknown and duplicate fair-sharing strategies": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.FairSharing = &configv1alpha1.FairSharing{Enable: true, PreemptionStrategies: []configv1alpha1.PreemptionStrategy{
					configv1alpha1.LessThanInitialShare, "Random", configv1alpha1.LessThanInitialShare,
				}}
			},
			wantFields: []string{"FieldValueNotSupported fairSharing.preemptionStrategies[1]", "FieldValueDuplicate fairSharing.preemptionStrategies[2]"},
		},
		"admission fair sharing out of range": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.AdmissionFairSharing = &configv1alpha1.AdmissionFairSharing{
					UsageHalfLifeTime:     &metav1.Duration{Duration: -time.Hour},
					UsageSamplingInterval: &metav1.Duration{Duration: time.Millisecond},
					ResourceWeights:       map[corev1.ResourceName]float64{"cpu": -1, "nvidia.com/gpu": 2},
				}
			},
			wantFields: []string{
				"FieldValueInvalid admissionFairSharing.usageHalfLifeTime", "FieldValueInvalid admissionFairSharing.usageSamplingInterval",
				"FieldValueInvalid admissionFairSharing.resourceWeights[cpu]",
			},
		},
		"admission fair sharing with a half-life of 0": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.AdmissionFairSharing = &configv1alpha1.AdmissionFairSharing{UsageHalfLifeTime: &metav1.Duration{}}
			},
		},
		"a pod namespace selector of teams": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Integrations.PodOptions.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
			},
		},
		"a pod namespace selector that selects the system namespaces": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Integrations.PodOptions.NamespaceSelector = &metav1.LabelSelector{}
			},
			wantFields: []string{
				"FieldValueInvalid integrations.podOptions.namespaceSelector",
				"FieldValueInvalid integrations.podOptions.namespaceSelector",
			},
		},
		"a managed namespace selector that selects the system namespaces": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.ManagedJobsNamespaceSelector = &metav1.LabelSelector{}
			},
			wantFields: []string{
				"FieldValueInvalid managedJobsNamespaceSelector",
				"FieldValueInvalid managedJobsNamespaceSelector",
			},
		},
		"a pod namespace selector that does not parse": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Integrations.PodOptions.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}
			},
			wantFields: []string{"FieldValueInvalid integrations.podOptions.namespaceSelector"},
		},
		"deployments without pods": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Integrations.Frameworks = []string{"batch/job", "deployment"}
			},
			wantFields: []string{"FieldValueInvalid integrations.frameworks[1]"},
		},
		"no frameworks": {
			change: func(cfg *configv1alpha1.Configuration) { cfg.Integrations.Frameworks = []string{} },
		},
		"a backoff whose max is below its base": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.WaitForPodsReady.RequeuingStrategy.BackoffBaseSeconds = ptr.To[int32](120)
				cfg.WaitForPodsReady.RequeuingStrategy.BackoffMaxSeconds = ptr.To[int32](60)
				cfg.WaitForPodsReady.RequeuingStrategy.BackoffLimitCount = ptr.To[int32](-1)
			},
			wantFields: []string{
				"FieldValueInvalid waitForPodsReady.requeuingStrategy.backoffMaxSeconds",
				"FieldValueInvalid waitForPodsReady.requeuingStrategy.backoffLimitCount",
			},
		},
		"recovery and blocking without the timeout on, an unknown timestamp": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.WaitForPodsReady.BlockAdmission = ptr.To(true)
				cfg.WaitForPodsReady.RecoveryTimeout = &metav1.Duration{Duration: time.Minute}
				cfg.WaitForPodsReady.RequeuingStrategy.Timestamp = ptr.To[configv1alpha1.RequeuingTimestamp]("Admission")
			},
			wantFields: []string{
				"FieldValueInvalid waitForPodsReady.recoveryTimeout",
				"FieldValueInvalid waitForPodsReady.blockAdmission",
				"FieldValueNotSupported waitForPodsReady.requeuingStrategy.timestamp",
			},
		},
		"negative retention": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.ObjectRetentionPolicies.Workloads.AfterFinished = &metav1.Duration{Duration: -time.Second}
				cfg.ObjectRetentionPolicies.Workloads.AfterDeactivatedByBerth = &metav1.Duration{Duration: -time.Minute}
				cfg.NodeFailures.GracePeriod = &metav1.Duration{Duration: -time.Second}
			},
			wantFields: []string{
				"FieldValueInvalid nodeFailures.gracePeriod",
				"FieldValueInvalid objectRetentionPolicies.workloads.afterFinished",
				"FieldValueInvalid objectRetentionPolicies.workloads.afterDeactivatedByBerth",
			},
		},
		"bad multicluster": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.MultiCluster.Origin = "not a label value"
				cfg.MultiCluster.WorkerLostTimeout = &metav1.Duration{Duration: -time.Second}
			},
			wantFields: []string{
				"FieldValueInvalid multiCluster.workerLostTimeout",
				"FieldValueInvalid multiCluster.origin",
			},
		},
		"zero recovery timeout": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.WaitForPodsReady.Enable = true
				cfg.WaitForPodsReady.BlockAdmission = ptr.To(true)
				cfg.WaitForPodsReady.RecoveryTimeout = &metav1.Duration{}
			},
			wantFields: []string{"FieldValueInvalid waitForPodsReady.recoveryTimeout"},
		},
		"zero timeout": {
			change:     func(cfg *configv1alpha1.Configuration) { cfg.WaitForPodsReady.Timeout = &metav1.Duration{} },
			wantFields: []string{"FieldValueInvalid waitForPodsReady.timeout"},
		},
		"negative timeout": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.WaitForPodsReady.Timeout = &metav1.Duration{Duration: -time.Second}
			},
			wantFields: []string{"FieldValueInvalid waitForPodsReady.timeout"},
		},
		"negative preemption delay": {
			change: func(cfg *configv1alpha1.Configuration) {
				cfg.Preemption.Delay = &metav1.Duration{Duration: -time.Second}
			},
			wantFields: []string{"FieldValueInvalid preemption.delay"},
		},
		"preemption at once": {
			change:     func(cfg *configv1alpha1.Configuration) { cfg.Preemption.Delay = &metav1.Duration{} },
			wantFields: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := defaulted()
			tc.change(cfg)
			if diff := cmp.Diff(tc.wantFields, fieldsOf(Validate(cfg))); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func fieldsOf(errs field.ErrorList) []string {
	var got []string
	for _, err := range errs {
		got = append(got, string(err.Type)+" "+err.Field)
	}
	return got
}
