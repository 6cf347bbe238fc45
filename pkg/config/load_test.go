package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

func TestDecode(t *testing.T) {
	cases := map[string]struct {
		data string
		want *configv1alpha1.Configuration
		// wantErr is a part of the error message; empty means no error.
		wantErr string
	}{
		"empty": {
			want: defaulted(),
		},
		"partial": {
			data: `
apiVersion: config.berth.dev/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  extraIPs: [127.0.0.1]
waitForPodsReady:
  enable: true
  timeout: 90s
`,
			want: func() *configv1alpha1.Configuration {
				cfg := defaulted()
				cfg.LeaderElection.LeaderElect = ptr.To(false)
				cfg.InternalCertManagement.ExtraIPs = []string{"127.0.0.1"}
				cfg.WaitForPodsReady.Enable, cfg.WaitForPodsReady.Timeout = true, &metav1.Duration{Duration: 90 * time.Second}
				return cfg
			}(),
		},
		"unknown field": {
			data:    "webhook:\n  prot: 9443\n",
			wantErr: `unknown field "prot"`,
		},
		"duplicate field": {
			data:    "defaultSchedulerName: a\ndefaultSchedulerName: b\n",
			wantErr: "decoding",
		},
		"wrong type": {
			data:    "clientConnection:\n  qps: fast\n",
			wantErr: "decoding",
		},
		"invalid": {
			data:    "integrations:\n  frameworks: [kubeflow.org/pytorchjob]\n",
			wantErr: "integrations.frameworks[0]: Unsupported value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Decode([]byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Decode error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	custom := filepath.Join(dir, "custom.yaml")
	if err := os.WriteFile(custom, []byte("defaultSchedulerName: gpu\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withScheduler := defaulted()
	withScheduler.DefaultSchedulerName = "gpu"
	cases := map[string]struct {
		path    string
		want    *configv1alpha1.Configuration
		wantErr bool
	}{
		"no path gives the defaults": {
			want: defaulted(),
		},
		// The sample documents the defaults: keep the two in step.
		"the sample holds the defaults": {
			path: filepath.Join("..", "..", "config", "manager", "controller_config.yaml"),
			want: defaulted(),
		},
		"a file": {
			path: custom,
			want: withScheduler,
		},
		"a missing file": {
			path:    filepath.Join(dir, "missing.yaml"),
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Load(tc.path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Load error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}
