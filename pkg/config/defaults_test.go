package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// defaulted is the configuration an empty file gives.
func defaulted() *configv1alpha1.Configuration {
	return &configv1alpha1.Configuration{
		TypeMeta:         metav1.TypeMeta{APIVersion: "config.berth.dev/v1alpha1", Kind: "Configuration"},
		ClientConnection: configv1alpha1.ClientConnection{QPS: 500, Burst: 1000},
		LeaderElection: configv1alpha1.LeaderElection{
			LeaderElect:       ptr.To(true),
			ResourceName:      "berth.dev",
			ResourceNamespace: "berth-system",
			LeaseDuration:     &metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     &metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       &metav1.Duration{Duration: 2 * time.Second},
		},
		Health:     configv1alpha1.Health{HealthProbeBindAddress: ":8081"},
		Metrics:    configv1alpha1.Metrics{BindAddress: ":8443", SecureServing: ptr.To(true), EnableLocalQueueMetrics: ptr.To(true)},
		Webhook:    configv1alpha1.Webhook{Port: 9443, CertDir: "/tmp/berth-webhook-certs"},
		Visibility: configv1alpha1.Visibility{BindAddress: ":8444", ServiceName: "berth-visibility"},
		InternalCertManagement: configv1alpha1.InternalCertManagement{
			Enable:                             ptr.To(true),
			WebhookServiceName:                 "berth-webhook-service",
			WebhookServiceNamespace:            "berth-system",
			WebhookSecretName:                  "berth-webhook-server-cert",
			ValidatingWebhookConfigurationName: "berth-validating-webhook-configuration",
			MutatingWebhookConfigurationName:   "berth-mutating-webhook-configuration",
		},
		Integrations: configv1alpha1.Integrations{
			Frameworks: []string{"batch/job", "jobset.x-k8s.io/jobset", "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"},
			PodOptions: &configv1alpha1.PodIntegrationOptions{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: "NotIn", Values: []string{"kube-system", "berth-system"}}},
			}},
		},
		ManagedJobsNamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: "NotIn", Values: []string{"kube-system", "berth-system"}}},
		},
		WaitForPodsReady: configv1alpha1.WaitForPodsReady{
			Timeout:        &metav1.Duration{Duration: 5 * time.Minute},
			BlockAdmission: ptr.To(false),
			RequeuingStrategy: configv1alpha1.RequeuingStrategy{
				Timestamp:          ptr.To(configv1alpha1.EvictionTimestamp),
				BackoffBaseSeconds: ptr.To[int32](60), BackoffMaxSeconds: ptr.To[int32](3600),
			},
		},
		Preemption:   configv1alpha1.Preemption{Delay: &metav1.Duration{Duration: 5 * time.Second}},
		NodeFailures: configv1alpha1.NodeFailures{Enable: ptr.To(true), GracePeriod: &metav1.Duration{Duration: time.Minute}},
		MultiCluster: configv1alpha1.MultiCluster{Origin: "berth", WorkerLostTimeout: &metav1.Duration{Duration: 15 * time.Minute}},
	}
}

func TestSetDefaults(t *testing.T) {
	cases := map[string]struct {
		in   *configv1alpha1.Configuration
		want *configv1alpha1.Configuration
	}{
		"empty gets every default": {
			in:   &configv1alpha1.Configuration{},
			want: defaulted(),
		},
		"set values are kept": {
			in: &configv1alpha1.Configuration{
				ClientConnection:       configv1alpha1.ClientConnection{QPS: 50},
				LeaderElection:         configv1alpha1.LeaderElection{LeaderElect: ptr.To(false), RetryPeriod: &metav1.Duration{Duration: time.Second}},
				Webhook:                configv1alpha1.Webhook{Port: 10250, Host: "127.0.0.1"},
				InternalCertManagement: configv1alpha1.InternalCertManagement{Enable: ptr.To(false), ExtraIPs: []string{"127.0.0.1"}},
				DefaultSchedulerName:   "gpu-scheduler",
				WaitForPodsReady:       configv1alpha1.WaitForPodsReady{Enable: true, Timeout: &metav1.Duration{Duration: time.Minute}},
			},
			want: func() *configv1alpha1.Configuration {
				cfg := defaulted()
				cfg.ClientConnection.QPS = 50
				cfg.LeaderElection.LeaderElect = ptr.To(false)
				cfg.LeaderElection.RetryPeriod = &metav1.Duration{Duration: time.Second}
				cfg.Webhook.Port = 10250
				cfg.Webhook.Host = "127.0.0.1"
				cfg.InternalCertManagement.Enable = ptr.To(false)
				cfg.InternalCertManagement.ExtraIPs = []string{"127.0.0.1"}
				cfg.DefaultSchedulerName = "gpu-scheduler"
				cfg.WaitForPodsReady.Enable, cfg.WaitForPodsReady.Timeout = true, &metav1.Duration{Duration: time.Minute}
				return cfg
			}(),
		},
		"an explicit empty framework list means none": {
			in: &configv1alpha1.Configuration{Integrations: configv1alpha1.Integrations{Frameworks: []string{}}},
			want: func() *configv1alpha1.Configuration {
				cfg := defaulted()
				cfg.Integrations.Frameworks = []string{}
				return cfg
			}(),
		},
		"pods are held where managedJobsNamespaceSelector says": {
			in: &configv1alpha1.Configuration{ManagedJobsNamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
			want: func() *configv1alpha1.Configuration {
				cfg := defaulted()
				cfg.ManagedJobsNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
				cfg.Integrations.PodOptions.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
				return cfg
			}(),
		},
		"defaulting twice changes nothing": {
			in:   defaulted(),
			want: defaulted(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			SetDefaults(tc.in)
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("SetDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricsDefaults: secure serving is the default, on :8443; turned off,
// the endpoint is plain HTTP on :8080 unless an address is given.
func TestMetricsDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   configv1alpha1.Metrics
		want configv1alpha1.Metrics
	}{
		{in: configv1alpha1.Metrics{}, want: configv1alpha1.Metrics{BindAddress: ":8443", SecureServing: ptr.To(true), EnableLocalQueueMetrics: ptr.To(true)}},
		{in: configv1alpha1.Metrics{SecureServing: ptr.To(false)}, want: configv1alpha1.Metrics{BindAddress: ":8080", SecureServing: ptr.To(false), EnableLocalQueueMetrics: ptr.To(true)}},
		{in: configv1alpha1.Metrics{BindAddress: "127.0.0.1:9", SecureServing: ptr.To(false), EnableLocalQueueMetrics: ptr.To(false)}, want: configv1alpha1.Metrics{BindAddress: "127.0.0.1:9", SecureServing: ptr.To(false), EnableLocalQueueMetrics: ptr.To(false)}},
		{
			in:   configv1alpha1.Metrics{CustomLabels: []configv1alpha1.MetricLabel{{Name: "team"}, {Name: "cost_center", SourceLabelKey: "example.com/cost-center"}}},
			want: configv1alpha1.Metrics{BindAddress: ":8443", SecureServing: ptr.To(true), EnableLocalQueueMetrics: ptr.To(true), CustomLabels: []configv1alpha1.MetricLabel{{Name: "team", SourceLabelKey: "team"}, {Name: "cost_center", SourceLabelKey: "example.com/cost-center"}}},
		},
	} {
		cfg := &configv1alpha1.Configuration{Metrics: tc.in}
		SetDefaults(cfg)
		if diff := cmp.Diff(tc.want, cfg.Metrics); diff != "" {
			t.Errorf("defaults of %+v (-want +got):\n%s", tc.in, diff)
		}
	}
}
