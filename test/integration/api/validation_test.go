package api

import (
	"fmt"
	"sync/atomic"
	"testing"
)

var names atomic.Int32

// validationCase is an object body the API server must accept (no wantErr)
// or refuse with an error containing every wantErr.
type validationCase struct {
	body    string
	wantErr []string
}

// runValidation creates an object of kind for every case.
func runValidation(t *testing.T, kind string, cases map[string]validationCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			checkErr(t, create(ctx, t, object(t, manifest(kind, tc.body))), tc.wantErr)
		})
	}
}

// manifest is an object of a berth.dev kind with a fresh name and body,
// the YAML under metadata (spec, or value for a WorkloadPriorityClass).
func manifest(kind, body string) string {
	ns := ""
	if kind == "LocalQueue" || kind == "Workload" {
		ns = "\n  namespace: default"
	}
	return fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: %s\nmetadata:\n  name: obj-%d%s\n%s", kind, names.Add(1), ns, body)
}

// gpuQueue is a ClusterQueue spec with one group of cpu and GPUs in
// flavor h100; quota lines are appended to the GPU resource.
func gpuQueue(cohort, gpuQuota string) string {
	return fmt.Sprintf(`spec:
  cohortName: %q
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - name: cpu
        nominalQuota: 10
      - name: nvidia.com/gpu
%s
`, cohort, gpuQuota)
}

func TestClusterQueueValidation(t *testing.T) {
	cases := map[string]validationCase{
		"valid with a cohort, limits and defaults": {
			body: gpuQueue("research", "        nominalQuota: 8\n        borrowingLimit: 4\n        lendingLimit: 2"),
		},
		"borrowingLimit without a cohort": {
			body:    gpuQueue("", "        nominalQuota: 8\n        borrowingLimit: 4"),
			wantErr: []string{"borrowingLimit may only be set when spec.cohortName is set"},
		},
		"a flavor preference where every flavor is tried": {
			body: "spec:\n  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, preference: PreemptionOverBorrowing}\n",
		},
		"a flavor preference where the search may stop": {
			body:    "spec:\n  flavorFungibility: {whenCanBorrow: MayStopSearch, preference: BorrowingOverPreemption}\n",
			wantErr: []string{"preference may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor"},
		},
		"lendingLimit without a cohort": {
			body:    gpuQueue("", "        nominalQuota: 8\n        lendingLimit: 4"),
			wantErr: []string{"lendingLimit may only be set when spec.cohortName is set"},
		},
		"the largest quotas Berth can count": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - {name: a, resources: [{name: cpu, nominalQuota: 1P}, {name: memory, nominalQuota: 1E}]}
`,
		},
		"a cpu quota whose milli-value does not fit": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: a, resources: [{name: cpu, nominalQuota: 1E}]}
`,
			wantErr: []string{"nominalQuota must be at most 1P for cpu and 1E for other resources"},
		},
		"a GPU borrowing limit that does not fit": {
			body:    gpuQueue("research", "        nominalQuota: 8\n        borrowingLimit: 9Ei"),
			wantErr: []string{"borrowingLimit must be at most 1P for cpu and 1E for other resources"},
		},
		"a fair-sharing weight": {
			body: gpuQueue("research", "        nominalQuota: 8") + "  fairSharing: {weight: 2500m}\n",
		},
		"a negative fair-sharing weight": {
			body:    gpuQueue("research", "        nominalQuota: 8") + "  fairSharing: {weight: -1}\n",
			wantErr: []string{"spec.fairSharing.weight must be from 0 to 1M"},
		},
		"a fair-sharing weight above 1M": {
			body:    gpuQueue("research", "        nominalQuota: 8") + "  fairSharing: {weight: 2M}\n",
			wantErr: []string{"spec.fairSharing.weight must be from 0 to 1M"},
		},
		"admission fair sharing": {
			body: gpuQueue("research", "        nominalQuota: 8") + "  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n",
		},
		"an unknown admission mode": {
			body:    gpuQueue("research", "        nominalQuota: 8") + "  admissionScope: {admissionMode: ByTurns}\n",
			wantErr: []string{"spec.admissionScope.admissionMode", "supported values"},
		},
		"invalid cohort name": {
			body:    gpuQueue("Team_A", "        nominalQuota: 1"),
			wantErr: []string{"spec.cohortName", "should match"},
		},
		"flavor named twice in a group": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: a, resources: [{name: cpu, nominalQuota: 1}]}
    - {name: a, resources: [{name: cpu, nominalQuota: 2}]}
`,
			wantErr: []string{"resourceGroups[].flavors[].name must be unique"},
		},
		"flavor named in two groups": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: a, resources: [{name: cpu, nominalQuota: 1}]}
  - coveredResources: [memory]
    flavors:
    - {name: a, resources: [{name: memory, nominalQuota: 1Gi}]}
`,
			wantErr: []string{"resourceGroups[].flavors[].name must be unique"},
		},
		"resource in two groups": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: a, resources: [{name: cpu, nominalQuota: 1}]}
  - coveredResources: [cpu]
    flavors:
    - {name: b, resources: [{name: cpu, nominalQuota: 1}]}
`,
			wantErr: []string{"a resource may appear in at most one resource group"},
		},
		"flavor missing a covered resource": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - {name: a, resources: [{name: cpu, nominalQuota: 1}]}
`,
			wantErr: []string{"must list exactly the group's coveredResources"},
		},
		"flavor resources out of order": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - {name: a, resources: [{name: memory, nominalQuota: 1Gi}, {name: cpu, nominalQuota: 1}]}
`,
			wantErr: []string{"must list exactly the group's coveredResources"},
		},
		"invalid flavor name": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: H100!, resources: [{name: cpu, nominalQuota: 1}]}
`,
			wantErr: []string{"spec.resourceGroups[0].flavors[0].name", "should match"},
		},
		"borrowWithinCohort while reclaimWithinCohort is Never": {
			body: `spec:
  preemption:
    borrowWithinCohort: {policy: LowerPriority}
`,
			wantErr: []string{"preemption.borrowWithinCohort may only be enabled when preemption.reclaimWithinCohort is not Never"},
		},
		"borrowWithinCohort with reclaimWithinCohort": {
			body: `spec:
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
`,
		},
		"maxPriorityThreshold without a policy": {
			body: `spec:
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort: {maxPriorityThreshold: 100}
`,
			wantErr: []string{"borrowWithinCohort.maxPriorityThreshold is only valid with policy LowerPriority"},
		},
		"unknown queueing strategy": {
			body:    "spec:\n  queueingStrategy: LIFO\n",
			wantErr: []string{"spec.queueingStrategy", `supported values: "StrictFIFO", "BestEffortFIFO"`},
		},
		"unknown stop policy": {
			body:    "spec:\n  stopPolicy: Pause\n",
			wantErr: []string{"spec.stopPolicy", "supported values"},
		},
		"withinClusterQueue Any": {
			body:    "spec:\n  preemption:\n    withinClusterQueue: Any\n",
			wantErr: []string{"spec.preemption.withinClusterQueue", "supported values"},
		},
	}
	runValidation(t, "ClusterQueue", cases)
}

func TestCohortValidation(t *testing.T) {
	cases := map[string]validationCase{
		"a negative fair-sharing weight": {
			body:    "spec:\n  parentName: org\n  fairSharing: {weight: \"-0.5\"}\n",
			wantErr: []string{"spec.fairSharing.weight must be from 0 to 1M"},
		},
		"valid with a parent and limits": {
			body: `spec:
  parentName: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 4, borrowingLimit: 0}]}
`,
		},
		"borrowingLimit without a parent": {
			body: `spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 2}]}
`,
			wantErr: []string{"borrowingLimit may only be set when spec.parentName is set"},
		},
		"lendingLimit without a parent": {
			body: `spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 2}]}
`,
			wantErr: []string{"lendingLimit may only be set when spec.parentName is set"},
		},
		"invalid parent name": {
			body:    "spec:\n  parentName: Org/1\n",
			wantErr: []string{"spec.parentName", "should match"},
		},
		"flavor named twice": {
			body: `spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: a, resources: [{name: cpu, nominalQuota: 1}]}
    - {name: a, resources: [{name: cpu, nominalQuota: 1}]}
`,
			wantErr: []string{"resourceGroups[].flavors[].name must be unique"},
		},
	}
	runValidation(t, "Cohort", cases)
}

func TestCohortIsNotItsOwnParent(t *testing.T) {
	ctx := testContext(t)
	obj := object(t, "apiVersion: berth.dev/v1alpha1\nkind: Cohort\nmetadata:\n  name: loop\nspec:\n  parentName: loop\n")
	checkErr(t, create(ctx, t, obj), []string{"spec.parentName must not name the cohort itself"})
}

func TestResourceFlavorValidation(t *testing.T) {
	cases := map[string]validationCase{
		"valid": {
			body: `spec:
  nodeLabels: {gpu.berth.dev/family: h100}
  nodeTaints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
`,
		},
		"taint with an unknown effect": {
			body:    "spec:\n  nodeTaints: [{key: gpu, effect: Sometimes}]\n",
			wantErr: []string{"spec.nodeTaints[].effect must be one of NoSchedule, PreferNoSchedule or NoExecute"},
		},
		"the same taint twice": {
			body:    "spec:\n  nodeTaints: [{key: gpu, effect: NoSchedule}, {key: gpu, value: x, effect: NoSchedule}]\n",
			wantErr: []string{"spec.nodeTaints[1]: Duplicate value"},
		},
		"toleration Exists with a value": {
			body:    "spec:\n  tolerations: [{key: gpu, operator: Exists, value: x}]\n",
			wantErr: []string{"spec.tolerations[].value must be empty when operator is Exists"},
		},
		"toleration with an unknown operator": {
			body:    "spec:\n  tolerations: [{key: gpu, operator: Maybe}]\n",
			wantErr: []string{"spec.tolerations[].operator must be Equal or Exists"},
		},
	}
	runValidation(t, "ResourceFlavor", cases)
}

func TestWorkloadPriorityClassValidation(t *testing.T) {
	cases := map[string]validationCase{
		"highest user-definable value": {body: "value: 1000000000\n"},
		"lowest value":                 {body: "value: -2147483648\n"},
		"above a PriorityClass's bound": {
			body:    "value: 1000000001\n",
			wantErr: []string{"value", "less than or equal to 1000000000"},
		},
		"no value": {
			body:    "description: nothing\n",
			wantErr: []string{"value: Required value"},
		},
	}
	runValidation(t, "WorkloadPriorityClass", cases)
}

func TestLocalQueueValidation(t *testing.T) {
	cases := map[string]validationCase{
		"valid":                     {body: "spec:\n  clusterQueue: team-a\n"},
		"no ClusterQueue":           {body: "spec: {}\n", wantErr: []string{"spec.clusterQueue: Required value"}},
		"invalid ClusterQueue":      {body: "spec:\n  clusterQueue: Team A\n", wantErr: []string{"spec.clusterQueue", "should match"}},
		"unknown stop policy":       {body: "spec:\n  clusterQueue: a\n  stopPolicy: Later\n", wantErr: []string{"spec.stopPolicy", "supported values"}},
		"stopped with HoldAndDrain": {body: "spec:\n  clusterQueue: a\n  stopPolicy: HoldAndDrain\n"},
		"a fair-sharing weight":     {body: "spec:\n  clusterQueue: a\n  fairSharing: {weight: 3}\n"},
		"a negative fair-sharing weight": {
			body:    "spec:\n  clusterQueue: a\n  fairSharing: {weight: -3}\n",
			wantErr: []string{"spec.fairSharing.weight must be from 0 to 1M"},
		},
	}
	runValidation(t, "LocalQueue", cases)
}

func TestQuotaPolicy(t *testing.T) {
	cases := map[string]struct {
		kind    string
		body    string
		wantErr []string
	}{
		"ClusterQueue with lendingLimit equal to nominalQuota": {
			kind: "ClusterQueue",
			body: gpuQueue("research", "        nominalQuota: 8\n        lendingLimit: \"8\""),
		},
		"ClusterQueue with lendingLimit above nominalQuota": {
			kind:    "ClusterQueue",
			body:    gpuQueue("research", "        nominalQuota: 8\n        lendingLimit: 9"),
			wantErr: []string{"lendingLimit must be less than or equal to nominalQuota"},
		},
		"ClusterQueue with lendingLimit in other units above nominalQuota": {
			kind:    "ClusterQueue",
			body:    gpuQueue("research", "        nominalQuota: 1\n        lendingLimit: 1001m"),
			wantErr: []string{"lendingLimit must be less than or equal to nominalQuota"},
		},
		"ClusterQueue with a negative nominalQuota": {
			kind:    "ClusterQueue",
			body:    gpuQueue("research", "        nominalQuota: -1"),
			wantErr: []string{"spec.resourceGroups[].flavors[].resources[].nominalQuota must not be negative"},
		},
		"ClusterQueue with a negative borrowingLimit": {
			kind:    "ClusterQueue",
			body:    gpuQueue("research", "        nominalQuota: 1\n        borrowingLimit: -2"),
			wantErr: []string{"borrowingLimit must not be negative"},
		},
		"ClusterQueue with a negative lendingLimit": {
			kind:    "ClusterQueue",
			body:    gpuQueue("research", "        nominalQuota: 1\n        lendingLimit: \"-500m\""),
			wantErr: []string{"lendingLimit must not be negative"},
		},
		"Cohort with lendingLimit above nominalQuota": {
			kind: "Cohort",
			body: `spec:
  parentName: org
  resourceGroups:
  - coveredResources: [memory]
    flavors:
    - {name: h100, resources: [{name: memory, nominalQuota: 1Gi, lendingLimit: 2Gi}]}
`,
			wantErr: []string{"lendingLimit must be less than or equal to nominalQuota"},
		},
		"Cohort with a negative nominalQuota": {
			kind: "Cohort",
			body: `spec:
  resourceGroups:
  - coveredResources: [memory]
    flavors:
    - {name: h100, resources: [{name: memory, nominalQuota: -1Gi}]}
`,
			wantErr: []string{"nominalQuota must not be negative"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			checkErr(t, create(ctx, t, object(t, manifest(tc.kind, tc.body))), tc.wantErr)
		})
	}
}
