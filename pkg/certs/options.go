package certs

import (
	"net"
	"time"

	"k8s.io/utils/clock"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// DefaultCheckInterval is how often a Manager checks its certificates.
// Renewal starts two months before a one-year certificate expires, so an
// hourly check is ample; it also picks up, within the hour, a certificate
// that another replica renewed in the Secret.
const DefaultCheckInterval = time.Hour

// Options configure a Manager.
type Options struct {
	// ServiceName and ServiceNamespace name the webhook Service; the
	// certificate's DNS names derive from them.
	ServiceName      string
	ServiceNamespace string
	// SecretName is the Secret, in ServiceNamespace, that holds the CA and
	// the serving certificate. When it cannot be created, the Manager keeps
	// its certificates in CertDir and memory only.
	SecretName string
	// ExtraServiceNames are other Services of ServiceNamespace that the
	// certificate serves (the visibility API's); their DNS names are added.
	ExtraServiceNames []string
	// APIServiceName names the APIService whose caBundle gets the CA (the
	// visibility API's); empty skips it.
	APIServiceName string
	// ExtraIPs are added to the certificate's IP subject alternative names.
	ExtraIPs []net.IP
	// CertDir receives ca.crt, tls.crt and tls.key.
	CertDir string
	// ValidatingWebhookConfigurationName and MutatingWebhookConfigurationName
	// name the configurations whose webhooks get the CA bundle; empty skips
	// one.
	ValidatingWebhookConfigurationName string
	MutatingWebhookConfigurationName   string
	// CheckInterval is how often the certificates are checked; default
	// DefaultCheckInterval.
	CheckInterval time.Duration
	// Clock tells the time that validity is judged against; default the
	// real clock. Tests set it.
	Clock clock.PassiveClock
}

// OptionsFrom returns the options that a defaulted and validated
// configuration asks for.
func OptionsFrom(cfg *configv1alpha1.Configuration) Options {
	icm := cfg.InternalCertManagement
	var ips []net.IP
	for _, s := range icm.ExtraIPs {
		// Validation has refused anything else.
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		}
	}
	var services []string
	apiService := ""
	if cfg.Visibility.BindAddress != "0" {
		services, apiService = []string{cfg.Visibility.ServiceName}, configv1alpha1.VisibilityAPIServiceName
	}
	return Options{
		ServiceName:                        icm.WebhookServiceName,
		ExtraServiceNames:                  services,
		APIServiceName:                     apiService,
		ServiceNamespace:                   icm.WebhookServiceNamespace,
		SecretName:                         icm.WebhookSecretName,
		ExtraIPs:                           ips,
		CertDir:                            cfg.Webhook.CertDir,
		ValidatingWebhookConfigurationName: icm.ValidatingWebhookConfigurationName,
		MutatingWebhookConfigurationName:   icm.MutatingWebhookConfigurationName,
	}
}

func (o *Options) setDefaults() {
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}
