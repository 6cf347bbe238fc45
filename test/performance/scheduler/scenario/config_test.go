package scenario

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

func TestParseConfig(t *testing.T) {
	cases := map[string]struct {
		data    string
		want    *Config
		wantErr string
	}{
		"a minimal scenario": {
			data: `
cohorts:
- className: c
  count: 2
  queuesSets:
  - className: q
    count: 3
    nominalQuota: 20
    borrowingLimit: "100"
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
    workloadsSets:
    - count: 4
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 200, priority: 50, request: 500m}
`,
			want: &Config{Cohorts: []CohortSet{{
				ClassName: "c", Count: 2,
				QueuesSets: []QueuesSet{{
					ClassName: "q", Count: 3,
					NominalQuota:        resource.MustParse("20"),
					BorrowingLimit:      ptr.To(resource.MustParse("100")),
					ReclaimWithinCohort: berthv1alpha1.PreemptionPolicyAny,
					WithinClusterQueue:  berthv1alpha1.PreemptionPolicyLowerPriority,
					WorkloadsSets: []WorkloadsSet{{Count: 4, CreationIntervalMs: 100, Workloads: []WorkloadTemplate{
						{ClassName: "small", RuntimeMs: 200, Priority: 50, Request: resource.MustParse("500m")},
					}}},
				}},
			}}},
		},
		"unknown fields are refused": {
			data:    "cohorts: []\nqueues: 3\n",
			wantErr: `unknown field "queues"`,
		},
		"no cohorts": {
			data:    "cohorts: []\n",
			wantErr: "cohorts: Required value",
		},
		"nonsense numbers and an unknown policy": {
			data: `
cohorts:
- className: c
  count: 0
  queuesSets:
  - className: q
    count: 1
    nominalQuota: 0
    reclaimWithinCohort: Sometimes
    workloadsSets:
    - count: 1
      creationIntervalMs: -1
      workloads:
      - {className: small, runtimeMs: 0, request: 1}
`,
			wantErr: "[cohorts[0].count: Invalid value: 0: must be positive, cohorts[0].queuesSets[0].nominalQuota: Invalid value: \"0\": must be positive, " +
				"cohorts[0].queuesSets[0].reclaimWithinCohort: Unsupported value: \"Sometimes\": supported values: \"Never\", \"LowerPriority\", \"LowerOrNewerEqualPriority\", \"Any\", " +
				"cohorts[0].queuesSets[0].workloadsSets[0].creationIntervalMs: Invalid value: -1: must not be negative, " +
				"cohorts[0].queuesSets[0].workloadsSets[0].workloads[0].runtimeMs: Invalid value: 0: must be positive]",
		},
		"a workload larger than the queue can ever hold": {
			data: `
cohorts:
- className: c
  count: 1
  queuesSets:
  - className: q
    count: 1
    nominalQuota: 2
    borrowingLimit: 1
    workloadsSets:
    - count: 1
      workloads:
      - {className: huge, runtimeMs: 1, request: 4}
`,
			wantErr: "exceeds what the ClusterQueue can ever hold (nominalQuota + borrowingLimit = 3)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseConfig() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseConfig() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommittedConfigs checks the committed scenarios are the ones issue 6
// names.
func TestCommittedConfigs(t *testing.T) {
	cases := map[string]struct {
		wantQueues    int
		wantWorkloads int
		wantClasses   map[string]int
	}{
		"baseline": {wantQueues: 30, wantWorkloads: 15000, wantClasses: map[string]int{"small": 10500, "medium": 3000, "large": 1500}},
		"large":    {wantQueues: 1000, wantWorkloads: 50000, wantClasses: map[string]int{"small": 35000, "medium": 11000, "large": 4000}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadConfig(filepath.Join("..", "configs", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Generate(cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			classes := map[string]int{}
			for _, w := range s.Workloads {
				classes[w.Class]++
			}
			got := struct{ Queues, Workloads int }{len(s.Queues), len(s.Workloads)}
			if diff := cmp.Diff(struct{ Queues, Workloads int }{tc.wantQueues, tc.wantWorkloads}, got); diff != "" {
				t.Errorf("sizes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantClasses, classes); diff != "" {
				t.Errorf("workloads per class (-want +got):\n%s", diff)
			}
		})
	}
}
