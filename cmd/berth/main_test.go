package main

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/config"
	"github.com/berth-dev/berth/pkg/controllermanager"
)

// TestManagerOptionsCarryTheLeaseTiming: the configuration's lease timing
// reaches the manager's leader election.
func TestManagerOptionsCarryTheLeaseTiming(t *testing.T) {
	cfg := &configv1alpha1.Configuration{}
	cfg.LeaderElection.LeaseDuration = &metav1.Duration{Duration: 6 * time.Second}
	config.SetDefaults(cfg)
	scheme := k8sruntime.NewScheme()
	if err := controllermanager.AddToScheme(scheme, nil); err != nil {
		t.Fatal(err)
	}
	opts, err := managerOptions(cfg, controllermanager.Deviations{}, &rest.Config{Host: "https://127.0.0.1:6443"}, scheme, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []time.Duration{ptr.Deref(opts.LeaseDuration, 0), ptr.Deref(opts.RenewDeadline, 0), ptr.Deref(opts.RetryPeriod, 0)}
	if want := []time.Duration{6 * time.Second, 10 * time.Second, 2 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("lease duration, renew deadline and retry period %v, want %v", got, want)
	}
}

// TestControllerOptionsCarryThePreemptionDelay: the default delay, and 0s
// written out, reach the scheduler's options.
func TestControllerOptionsCarryThePreemptionDelay(t *testing.T) {
	for _, tc := range []struct {
		set  *metav1.Duration
		want time.Duration
	}{
		{nil, configv1alpha1.DefaultPreemptionDelay},
		{&metav1.Duration{}, 0},
		{&metav1.Duration{Duration: time.Minute}, time.Minute},
	} {
		cfg := &configv1alpha1.Configuration{}
		cfg.Preemption.Delay = tc.set
		config.SetDefaults(cfg)
		if got := controllerOptions(cfg, controllermanager.Deviations{}).PreemptionDelay; got != tc.want {
			t.Errorf("preemption.delay %v: the scheduler gets %s, want %s", tc.set, got, tc.want)
		}
	}
}

func TestControllerOptionsCarryWaitForPodsReady(t *testing.T) {
	cfg := &configv1alpha1.Configuration{WaitForPodsReady: configv1alpha1.WaitForPodsReady{
		Enable: true, BlockAdmission: ptr.To(true), RecoveryTimeout: &metav1.Duration{Duration: time.Minute},
		RequeuingStrategy: configv1alpha1.RequeuingStrategy{Timestamp: ptr.To(configv1alpha1.CreationTimestamp)},
	}}
	config.SetDefaults(cfg)
	opts := controllerOptions(cfg, controllermanager.Deviations{})
	if !opts.BlockAdmission || opts.Controllers.RecoveryTimeout != time.Minute || !opts.Ordering.PodsReadyByCreation ||
		opts.Controllers.PodsReadyTimeout != configv1alpha1.DefaultWaitForPodsReadyTimeout {
		t.Errorf("the controllers get blockAdmission %t, recoveryTimeout %s, by creation %t, timeout %s; want true, 1m, true, the default",
			opts.BlockAdmission, opts.Controllers.RecoveryTimeout, opts.Ordering.PodsReadyByCreation, opts.Controllers.PodsReadyTimeout)
	}
	cfg.WaitForPodsReady.Enable = false
	if opts := controllerOptions(cfg, controllermanager.Deviations{}); opts.BlockAdmission || opts.Controllers.RecoveryTimeout != 0 || opts.Controllers.PodsReadyTimeout != 0 {
		t.Errorf("with waitForPodsReady off the controllers still get %+v", opts.Controllers)
	}
}

func TestControllerOptionsCarryTheRetention(t *testing.T) {
	cfg := &configv1alpha1.Configuration{}
	config.SetDefaults(cfg)
	if r := controllerOptions(cfg, controllermanager.Deviations{}).Controllers.Retention; r.AfterFinished != nil || r.AfterDeactivated != nil {
		t.Errorf("by default the controllers get retention %+v, want Workloads kept", r)
	}
	cfg.ObjectRetentionPolicies.Workloads.AfterFinished = &metav1.Duration{}
	cfg.ObjectRetentionPolicies.Workloads.AfterDeactivatedByBerth = &metav1.Duration{Duration: time.Hour}
	r := controllerOptions(cfg, controllermanager.Deviations{}).Controllers.Retention
	if r.AfterFinished == nil || *r.AfterFinished != 0 || r.AfterDeactivated == nil || *r.AfterDeactivated != time.Hour {
		t.Errorf("the controllers get retention %+v, want 0s after finished and 1h after deactivated", r)
	}
}
