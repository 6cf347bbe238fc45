package main

import (
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// loadConfig loads a file of config/scheduler as the scheduler does,
// validates it, and builds every profile with the in-tree plugins plus
// Berth's, so that a typo in a plugin name or its args fails here rather
// than when a scheduler starts.
func loadConfig(t *testing.T, name string) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, "../../config/scheduler/"+name)
	if err != nil {
		t.Fatal(err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(berthPlugins); err != nil {
		t.Fatal(err)
	}
	metricsOnce.Do(metrics.Register)
	factory := informers.NewSharedInformerFactory(clientsetfake.NewClientset(), 0)
	for i := range cfg.Profiles {
		profile := &cfg.Profiles[i]
		if _, err := frameworkruntime.NewFramework(ctx, registry, profile,
			frameworkruntime.WithInformerFactory(factory),
			frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot())); err != nil {
			t.Errorf("%s: profile %s: %v", name, profile.SchedulerName, err)
		}
	}
	return cfg
}

var metricsOnce sync.Once

func profileNames(cfg *schedconfig.KubeSchedulerConfiguration) []string {
	var names []string
	for _, p := range cfg.Profiles {
		names = append(names, p.SchedulerName)
	}
	return names
}

// TestSchedulerConfig checks the local cluster's configuration: its one
// scheduler serves both profiles, and contends for no Lease.
func TestSchedulerConfig(t *testing.T) {
	cfg := loadConfig(t, "scheduler-config.yaml")
	if cfg.LeaderElection.LeaderElect {
		t.Error("leaderElection.leaderElect is true, want false for the single local scheduler")
	}
	if names := profileNames(cfg); !slices.Equal(names, []string{"default-scheduler", "berth-scheduler"}) {
		t.Errorf("profiles = %v, want [default-scheduler berth-scheduler]", names)
	}
}

// TestClusterSchedulerConfig checks the configuration of berth-scheduler
// beside a cluster's own kube-scheduler: it must not serve
// default-scheduler, which that one does, its replicas elect a leader on a
// Lease of their own, and its profile is the one the local cluster tests.
func TestClusterSchedulerConfig(t *testing.T) {
	cfg := loadConfig(t, "cluster-config.yaml")
	if names := profileNames(cfg); !slices.Equal(names, []string{"berth-scheduler"}) {
		t.Errorf("profiles = %v, want [berth-scheduler] alone", names)
	}
	if le := cfg.LeaderElection; !le.LeaderElect || le.ResourceName != "berth-scheduler" || le.ResourceNamespace != "berth-system" {
		t.Errorf("leaderElection = %+v, want it on, on the Lease berth-system/berth-scheduler", le)
	}
	local := loadConfig(t, "scheduler-config.yaml")
	if diff := cmp.Diff(local.Profiles[1], cfg.Profiles[0]); diff != "" {
		t.Errorf("the berth-scheduler profile differs from the local cluster's (-local +cluster):\n%s", diff)
	}
}
