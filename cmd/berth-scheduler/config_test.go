package main

import (
	"testing"

	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/berth-dev/berth/cmd/berth-scheduler/plugins/gang"
	"github.com/berth-dev/berth/cmd/berth-scheduler/plugins/gpupacking"
)

// TestSchedulerConfig loads config/scheduler/scheduler-config.yaml as the
// scheduler does, validates it, and builds every profile with the in-tree
// plugins plus Berth's, so that a typo in a plugin name or its args fails
// here rather than when the local cluster starts.
func TestSchedulerConfig(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, "../../config/scheduler/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LeaderElection.LeaderElect {
		t.Error("leaderElection.leaderElect is true, want false for the single local scheduler")
	}

	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(frameworkruntime.Registry{gang.Name: gang.New, gpupacking.Name: gpupacking.New}); err != nil {
		t.Fatal(err)
	}
	metrics.Register()
	factory := informers.NewSharedInformerFactory(clientsetfake.NewClientset(), 0)
	var names []string
	for i := range cfg.Profiles {
		profile := &cfg.Profiles[i]
		names = append(names, profile.SchedulerName)
		if _, err := frameworkruntime.NewFramework(ctx, registry, profile,
			frameworkruntime.WithInformerFactory(factory),
			frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot())); err != nil {
			t.Errorf("profile %s: %v", profile.SchedulerName, err)
		}
	}
	if len(names) != 2 || names[0] != "default-scheduler" || names[1] != "berth-scheduler" {
		t.Errorf("profiles = %v, want [default-scheduler berth-scheduler]", names)
	}
}
