package scenario

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

func tinyConfig() *Config {
	return &Config{Cohorts: []CohortSet{{
		ClassName: "co", Count: 1,
		QueuesSets: []QueuesSet{{
			ClassName: "cq", Count: 2, NominalQuota: resource.MustParse("4"),
			WorkloadsSets: []WorkloadsSet{
				{Count: 2, CreationIntervalMs: 100, Workloads: []WorkloadTemplate{{ClassName: "s", RuntimeMs: 50, Priority: 1, Request: resource.MustParse("1")}}},
				{Count: 1, CreationIntervalMs: 500, Workloads: []WorkloadTemplate{{ClassName: "l", RuntimeMs: 300, Priority: 9, Request: resource.MustParse("4")}}},
			},
		}},
	}}}
}

func TestGenerate(t *testing.T) {
	ms := time.Millisecond
	wl := func(ns, name, class string, offset, runtime time.Duration, prio int32, milli int64) Planned {
		return Planned{Namespace: ns, Name: name, Class: class, Cohort: "co-0", Offset: offset, Runtime: runtime, Priority: prio, RequestMilli: milli}
	}
	cases := map[string]struct {
		scale         float64
		wantWorkloads []Planned
		wantErr       bool
	}{
		"the whole scenario, in creation order": {
			scale: 1,
			wantWorkloads: []Planned{
				wl("co-0-cq-0", "s-0-0", "s", 0, 50*ms, 1, 1000),
				wl("co-0-cq-0", "l-1-0", "l", 0, 300*ms, 9, 4000),
				wl("co-0-cq-1", "s-0-0", "s", 0, 50*ms, 1, 1000),
				wl("co-0-cq-1", "l-1-0", "l", 0, 300*ms, 9, 4000),
				wl("co-0-cq-0", "s-0-1", "s", 100*ms, 50*ms, 1, 1000),
				wl("co-0-cq-1", "s-0-1", "s", 100*ms, 50*ms, 1, 1000),
			},
		},
		"scaled down, every set keeps one": {
			scale: 0.1,
			wantWorkloads: []Planned{
				wl("co-0-cq-0", "s-0-0", "s", 0, 50*ms, 1, 1000),
				wl("co-0-cq-0", "l-1-0", "l", 0, 300*ms, 9, 4000),
				wl("co-0-cq-1", "s-0-0", "s", 0, 50*ms, 1, 1000),
				wl("co-0-cq-1", "l-1-0", "l", 0, 300*ms, 9, 4000),
			},
		},
		"scale above one": {scale: 2, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := Generate(tinyConfig(), tc.scale)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Generate() error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.wantWorkloads, s.Workloads); diff != "" {
				t.Errorf("Generate() workloads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Cohort{{Name: "co-0", CapacityMilli: 8000}}, s.Cohorts); diff != "" {
				t.Errorf("Generate() cohorts (-want +got):\n%s", diff)
			}
		})
	}
}
