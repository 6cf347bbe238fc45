package config

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// disabledAddress turns off the probe or metrics endpoint, as in
// controller-runtime.
const disabledAddress = "0"

// Validate returns what is wrong with a defaulted configuration, one error
// per field.
func Validate(cfg *configv1alpha1.Configuration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateTypeMeta(cfg)...)
	errs = append(errs, validateClientConnection(&cfg.ClientConnection, field.NewPath("clientConnection"))...)
	errs = append(errs, validateLeaderElection(&cfg.LeaderElection, field.NewPath("leaderElection"))...)
	errs = append(errs, validateBindAddress(cfg.Health.HealthProbeBindAddress, field.NewPath("health", "healthProbeBindAddress"))...)
	errs = append(errs, validateBindAddress(cfg.Metrics.BindAddress, field.NewPath("metrics", "bindAddress"))...)
	errs = append(errs, validateCustomLabels(cfg.Metrics.CustomLabels, field.NewPath("metrics", "customLabels"))...)
	errs = append(errs, validateWebhook(&cfg.Webhook, field.NewPath("webhook"))...)
	errs = append(errs, validateVisibility(&cfg.Visibility, field.NewPath("visibility"))...)
	errs = append(errs, validateInternalCertManagement(&cfg.InternalCertManagement, field.NewPath("internalCertManagement"))...)
	if name := cfg.DefaultSchedulerName; name != "" {
		// The API server validates pod.spec.schedulerName the same way.
		errs = append(errs, dnsSubdomain(name, field.NewPath("defaultSchedulerName"))...)
	}
	errs = append(errs, validateFrameworks(cfg.Integrations.Frameworks, field.NewPath("integrations", "frameworks"))...)
	errs = append(errs, validatePodNamespaceSelector(cfg.ManagedJobsNamespaceSelector, field.NewPath("managedJobsNamespaceSelector"))...)
	if po := cfg.Integrations.PodOptions; po != nil {
		errs = append(errs, validatePodNamespaceSelector(po.NamespaceSelector, field.NewPath("integrations", "podOptions", "namespaceSelector"))...)
	}
	errs = append(errs, validateWaitForPodsReady(&cfg.WaitForPodsReady, field.NewPath("waitForPodsReady"))...)
	if d := cfg.NodeFailures.GracePeriod; d != nil && d.Duration < 0 {
		errs = append(errs, field.Invalid(field.NewPath("nodeFailures", "gracePeriod"), d.Duration.String(), "must not be negative"))
	}
	if d := cfg.MultiCluster.WorkerLostTimeout; d != nil && d.Duration < 0 {
		errs = append(errs, field.Invalid(field.NewPath("multiCluster", "workerLostTimeout"), d.Duration.String(), "must not be negative"))
	}
	if o := cfg.MultiCluster.Origin; o != "" {
		for _, msg := range validation.IsValidLabelValue(o) {
			errs = append(errs, field.Invalid(field.NewPath("multiCluster", "origin"), o, msg))
		}
	}
	retention := field.NewPath("objectRetentionPolicies", "workloads")
	for _, f := range []struct {
		name string
		d    *metav1.Duration
	}{
		{"afterFinished", cfg.ObjectRetentionPolicies.Workloads.AfterFinished},
		{"afterDeactivatedByBerth", cfg.ObjectRetentionPolicies.Workloads.AfterDeactivatedByBerth},
	} {
		if f.d != nil && f.d.Duration < 0 {
			errs = append(errs, field.Invalid(retention.Child(f.name), f.d.Duration.String(), "must not be negative"))
		}
	}
	if d := cfg.Preemption.Delay; d != nil && d.Duration < 0 {
		errs = append(errs, field.Invalid(field.NewPath("preemption", "delay"), d.Duration.String(), "must not be negative"))
	}
	if fs := cfg.FairSharing; fs != nil {
		errs = append(errs, validatePreemptionStrategies(fs.PreemptionStrategies, field.NewPath("fairSharing", "preemptionStrategies"))...)
	}
	if afs := cfg.AdmissionFairSharing; afs != nil {
		errs = append(errs, validateAdmissionFairSharing(afs, field.NewPath("admissionFairSharing"))...)
	}
	return errs
}

// maxCustomLabels bounds the labels added to every queue series: each
// multiplies nothing, but each is one more string per series.
const maxCustomLabels = 8

// promLabel is what Prometheus accepts as a label name.
var promLabel = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// reservedMetricLabels are the labels Berth's series already have.
var reservedMetricLabels = sets.New("cluster_queue", "local_queue", "namespace", "cohort", "flavor", "resource", "status", "reason", "le")

func validateCustomLabels(labels []configv1alpha1.MetricLabel, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(labels) > maxCustomLabels {
		errs = append(errs, field.TooMany(path, len(labels), maxCustomLabels))
	}
	seen := sets.New[string]()
	for i, l := range labels {
		p := path.Index(i)
		switch {
		case !promLabel.MatchString(l.Name) || strings.HasPrefix(l.Name, "__"):
			errs = append(errs, field.Invalid(p.Child("name"), l.Name, "must be a Prometheus label name: letters, digits and underscores, not starting with a digit or __"))
		case reservedMetricLabels.Has(l.Name):
			errs = append(errs, field.Invalid(p.Child("name"), l.Name, "is a label Berth's series already have"))
		case seen.Has(l.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), l.Name))
		}
		seen.Insert(l.Name)
		if l.SourceLabelKey != "" {
			for _, msg := range validation.IsQualifiedName(l.SourceLabelKey) {
				errs = append(errs, field.Invalid(p.Child("sourceLabelKey"), l.SourceLabelKey, msg))
			}
		}
	}
	return errs
}

func validateAdmissionFairSharing(afs *configv1alpha1.AdmissionFairSharing, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := afs.UsageHalfLifeTime; d != nil && d.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("usageHalfLifeTime"), d.Duration.String(), "must not be negative"))
	}
	if d := afs.UsageSamplingInterval; d != nil && d.Duration < time.Second {
		errs = append(errs, field.Invalid(path.Child("usageSamplingInterval"), d.Duration.String(), "must be at least 1s"))
	}
	for name, w := range afs.ResourceWeights {
		if !(w >= 0) || math.IsInf(w, 0) {
			errs = append(errs, field.Invalid(path.Child("resourceWeights").Key(string(name)), w, "must be a finite number, 0 or more"))
		}
	}
	return errs
}

func validateTypeMeta(cfg *configv1alpha1.Configuration) field.ErrorList {
	var errs field.ErrorList
	if want := configv1alpha1.GroupVersion.String(); cfg.APIVersion != want {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), cfg.APIVersion, []string{want}))
	}
	if cfg.Kind != configv1alpha1.Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), cfg.Kind, []string{configv1alpha1.Kind}))
	}
	return errs
}

func validateClientConnection(c *configv1alpha1.ClientConnection, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.QPS <= 0 {
		errs = append(errs, field.Invalid(path.Child("qps"), c.QPS, "must be greater than 0"))
	}
	// A burst below the QPS would make the token bucket too small to hold
	// one second of requests: the rate would be throttled to less than the
	// configured QPS whenever requests come in bunches.
	if c.Burst <= 0 || float32(c.Burst) < c.QPS {
		errs = append(errs, field.Invalid(path.Child("burst"), c.Burst, fmt.Sprintf("must be greater than 0 and at least qps (%v)", c.QPS)))
	}
	return errs
}

func validateLeaderElection(le *configv1alpha1.LeaderElection, path *field.Path) field.ErrorList {
	if le.LeaderElect == nil || !*le.LeaderElect {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, dnsSubdomain(le.ResourceName, path.Child("resourceName"))...)
	errs = append(errs, dnsLabel(le.ResourceNamespace, path.Child("resourceNamespace"))...)
	lease, renew, retry := durationOf(le.LeaseDuration), durationOf(le.RenewDeadline), durationOf(le.RetryPeriod)
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"leaseDuration", lease}, {"renewDeadline", renew}, {"retryPeriod", retry}} {
		if d.value <= 0 {
			errs = append(errs, field.Invalid(path.Child(d.name), d.value.String(), "must be greater than 0"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	// client-go's leader election refuses to start otherwise: the leader
	// must give up before its Lease runs out, and have time to retry,
	// with jitter, before it gives up.
	if renew >= lease {
		errs = append(errs, field.Invalid(path.Child("renewDeadline"), renew.String(), fmt.Sprintf("must be shorter than leaseDuration (%s)", lease)))
	}
	if minRenew := time.Duration(leaderelection.JitterFactor * float64(retry)); renew <= minRenew {
		errs = append(errs, field.Invalid(path.Child("renewDeadline"), renew.String(),
			fmt.Sprintf("must be longer than retryPeriod (%s) times %v, the jitter of the retries", retry, leaderelection.JitterFactor)))
	}
	return errs
}

// durationOf is d's duration, 0 if unset.
func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

func validateBindAddress(addr string, path *field.Path) field.ErrorList {
	if addr == disabledAddress {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return field.ErrorList{field.Invalid(path, addr, `must be host:port, :port or "0" (off)`)}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return field.ErrorList{field.Invalid(path, addr, "port must be a number from 0 to 65535")}
	}
	return nil
}

func validateVisibility(v *configv1alpha1.Visibility, path *field.Path) field.ErrorList {
	errs := validateBindAddress(v.BindAddress, path.Child("bindAddress"))
	for _, msg := range validation.IsDNS1035Label(v.ServiceName) {
		errs = append(errs, field.Invalid(path.Child("serviceName"), v.ServiceName, msg))
	}
	if a := v.AdvertiseAddress; a != "" {
		if ip := net.ParseIP(a); ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			// The API server refuses such an address in an EndpointSlice.
			errs = append(errs, field.Invalid(path.Child("advertiseAddress"), a, "must be an IP address that is neither loopback nor link-local"))
		}
	}
	return errs
}

func validateWebhook(w *configv1alpha1.Webhook, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(w.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), w.Port, msg))
	}
	if w.CertDir == "" {
		errs = append(errs, field.Required(path.Child("certDir"), ""))
	}
	return errs
}

func validateInternalCertManagement(icm *configv1alpha1.InternalCertManagement, path *field.Path) field.ErrorList {
	if icm.Enable == nil || !*icm.Enable {
		return nil
	}
	var errs field.ErrorList
	// A Service name is a DNS label, unlike most object names.
	for _, msg := range validation.IsDNS1035Label(icm.WebhookServiceName) {
		errs = append(errs, field.Invalid(path.Child("webhookServiceName"), icm.WebhookServiceName, msg))
	}
	errs = append(errs, dnsLabel(icm.WebhookServiceNamespace, path.Child("webhookServiceNamespace"))...)
	errs = append(errs, dnsSubdomain(icm.WebhookSecretName, path.Child("webhookSecretName"))...)
	for i, ip := range icm.ExtraIPs {
		if net.ParseIP(ip) == nil {
			errs = append(errs, field.Invalid(path.Child("extraIPs").Index(i), ip, "must be an IPv4 or IPv6 address"))
		}
	}
	errs = append(errs, dnsSubdomain(icm.ValidatingWebhookConfigurationName, path.Child("validatingWebhookConfigurationName"))...)
	errs = append(errs, dnsSubdomain(icm.MutatingWebhookConfigurationName, path.Child("mutatingWebhookConfigurationName"))...)
	return errs
}

func validateFrameworks(frameworks []string, path *field.Path) field.ErrorList {
	known := append(DefaultFrameworks(), optInFrameworks...)
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, f := range frameworks {
		switch {
		case !slices.Contains(known, f):
			errs = append(errs, field.NotSupported(path.Index(i), f, known))
		case seen.Has(f):
			errs = append(errs, field.Duplicate(path.Index(i), f))
		}
		seen.Insert(f)
	}
	for _, f := range []string{configv1alpha1.FrameworkDeployment, configv1alpha1.FrameworkStatefulSet, configv1alpha1.FrameworkLeaderWorkerSet} {
		if i := slices.Index(frameworks, f); i >= 0 && !seen.Has(configv1alpha1.FrameworkPod) {
			errs = append(errs, field.Invalid(path.Index(i), f,
				"needs the framework "+configv1alpha1.FrameworkPod+": its replicas are queued as pods"))
		}
	}
	if i := slices.Index(frameworks, configv1alpha1.FrameworkTrainJob); i >= 0 && !seen.Has(configv1alpha1.FrameworkJobSet) {
		errs = append(errs, field.Invalid(path.Index(i), configv1alpha1.FrameworkTrainJob,
			"needs the framework "+configv1alpha1.FrameworkJobSet+": Berth writes a TrainJob's admission into the JobSet Trainer makes of it"))
	}
	return errs
}

// validatePodNamespaceSelector refuses a selector that does not parse, and
// one that selects kube-system or berth-system: a queued pod there would
// wait on Berth, and Berth's own pods on themselves.
func validatePodNamespaceSelector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if sel == nil {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return field.ErrorList{field.Invalid(path, sel.String(), err.Error())}
	}
	var errs field.ErrorList
	for _, ns := range []string{configv1alpha1.KubeSystemNamespace, configv1alpha1.DefaultNamespace} {
		if s.Matches(labels.Set{corev1.LabelMetadataName: ns}) {
			errs = append(errs, field.Invalid(path, sel.String(), fmt.Sprintf("must not select namespace %s", ns)))
		}
	}
	return errs
}

func validatePreemptionStrategies(strategies []configv1alpha1.PreemptionStrategy, path *field.Path) field.ErrorList {
	known := []string{string(configv1alpha1.LessThanOrEqualToFinalShare), string(configv1alpha1.LessThanInitialShare)}
	var errs field.ErrorList
	seen := sets.New[configv1alpha1.PreemptionStrategy]()
	for i, s := range strategies {
		switch {
		case !slices.Contains(known, string(s)):
			errs = append(errs, field.NotSupported(path.Index(i), s, known))
		case seen.Has(s):
			errs = append(errs, field.Duplicate(path.Index(i), s))
		}
		seen.Insert(s)
	}
	return errs
}

func validateWaitForPodsReady(w *configv1alpha1.WaitForPodsReady, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if w.Timeout == nil || w.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("timeout"), w.Timeout, "must be greater than 0"))
	}
	if w.RecoveryTimeout != nil && w.RecoveryTimeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("recoveryTimeout"), w.RecoveryTimeout, "must be greater than 0, or unset for no limit"))
	}
	if w.RecoveryTimeout != nil && !w.Enable {
		errs = append(errs, field.Invalid(path.Child("recoveryTimeout"), w.RecoveryTimeout, "has no effect unless waitForPodsReady.enable is true"))
	}
	if ptr.Deref(w.BlockAdmission, false) && !w.Enable {
		errs = append(errs, field.Invalid(path.Child("blockAdmission"), true, "has no effect unless waitForPodsReady.enable is true"))
	}
	rs, rsPath := &w.RequeuingStrategy, path.Child("requeuingStrategy")
	if ts := rs.Timestamp; ts != nil && *ts != configv1alpha1.EvictionTimestamp && *ts != configv1alpha1.CreationTimestamp {
		errs = append(errs, field.NotSupported(rsPath.Child("timestamp"), *ts, []configv1alpha1.RequeuingTimestamp{configv1alpha1.EvictionTimestamp, configv1alpha1.CreationTimestamp}))
	}
	base, maxWait := ptr.Deref(rs.BackoffBaseSeconds, 0), ptr.Deref(rs.BackoffMaxSeconds, 0)
	if base < 0 {
		errs = append(errs, field.Invalid(rsPath.Child("backoffBaseSeconds"), base, "must not be negative"))
	}
	if maxWait < base {
		errs = append(errs, field.Invalid(rsPath.Child("backoffMaxSeconds"), maxWait, fmt.Sprintf("must be at least backoffBaseSeconds (%d)", base)))
	}
	if n := rs.BackoffLimitCount; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(rsPath.Child("backoffLimitCount"), *n, "must not be negative"))
	}
	return errs
}

func dnsSubdomain(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func dnsLabel(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}
