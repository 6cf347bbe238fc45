package fromkueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestConvert(t *testing.T) {
	cases := map[string]struct {
		in, want  string
		keep      bool
		wantNotes []string
	}{
		"a v1beta1 ClusterQueue takes v1beta2's names": {
			in: `{apiVersion: kueue.x-k8s.io/v1beta1, kind: ClusterQueue, metadata: {name: cq},
spec: {cohort: all, flavorFungibility: {whenCanBorrow: Borrow, whenCanPreempt: Preempt}}}`,
			want: `{apiVersion: berth.dev/v1alpha1, kind: ClusterQueue, metadata: {name: cq},
spec: {cohortName: all, flavorFungibility: {whenCanBorrow: MayStopSearch, whenCanPreempt: MayStopSearch}}}`,
			keep: true,
		},
		"a queue read from a cluster becomes a new object": {
			in: `{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: main, namespace: team, uid: 1f0c, resourceVersion: "42",
generation: 3, creationTimestamp: "2026-12-01T00:00:00Z", managedFields: [{manager: kubectl}], labels: {team: a}},
spec: {clusterQueue: cq}, status: {pendingWorkloads: 2}}`,
			want: `{apiVersion: berth.dev/v1alpha1, kind: LocalQueue, metadata: {name: main, namespace: team, labels: {team: a}}, spec: {clusterQueue: cq}}`,
			keep: true,
		},
		"Kueue's controller configuration": {
			in:        `{apiVersion: config.kueue.x-k8s.io/v1beta2, kind: Configuration, manageJobsWithoutQueueName: true}`,
			wantNotes: []string{"Configuration: kind: Kueue's controller configuration is not converted: write Berth's, which has the same names where it has the setting; left out"},
		},
		"what still names Kueue where convert cannot tell what it should become": {
			in: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, annotations: {provreq.kueue.x-k8s.io/maxRunDurationSeconds: "600"},
ownerReferences: [{apiVersion: kueue.x-k8s.io/v1beta2, kind: Workload, name: w, uid: u}]}, spec: {managedBy: kueue.x-k8s.io/multikueue}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j, annotations: {provreq.kueue.x-k8s.io/maxRunDurationSeconds: "600"},
ownerReferences: [{apiVersion: kueue.x-k8s.io/v1beta2, kind: Workload, name: w, uid: u}]}, spec: {managedBy: kueue.x-k8s.io/multikueue}}`,
			keep: true,
			wantNotes: []string{
				"Job j: metadata.annotations[provreq.kueue.x-k8s.io/maxRunDurationSeconds]: Berth does not read it; left as it is",
				`Job j: metadata.ownerReferences[0].apiVersion: still names kueue.x-k8s.io ("kueue.x-k8s.io/v1beta2"): Berth does not read it; rewrite or remove it by hand`,
				`Job j: spec.managedBy: still names kueue.x-k8s.io ("kueue.x-k8s.io/multikueue"): Berth does not read it; rewrite or remove it by hand`,
			},
		},
		"a v1alpha1 Cohort's parent": {
			in:   `{apiVersion: kueue.x-k8s.io/v1alpha1, kind: Cohort, metadata: {name: team}, spec: {parent: org}}`,
			want: `{apiVersion: berth.dev/v1alpha1, kind: Cohort, metadata: {name: team}, spec: {parentName: org}}`,
			keep: true,
		},
		"the provisioning check": {
			in: `{apiVersion: kueue.x-k8s.io/v1beta2, kind: AdmissionCheck, metadata: {name: prov},
spec: {controllerName: kueue.x-k8s.io/provisioning-request, parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: c}}}`,
			want: `{apiVersion: berth.dev/v1alpha1, kind: AdmissionCheck, metadata: {name: prov},
spec: {controllerName: berth.dev/provisioning-request, parameters: {apiGroup: berth.dev, kind: ProvisioningRequestConfig, name: c}}}`,
			keep: true,
		},
		"a check Berth has no controller for": {
			in:        `{apiVersion: kueue.x-k8s.io/v1beta2, kind: AdmissionCheck, metadata: {name: mk}, spec: {controllerName: kueue.x-k8s.io/multikueue}}`,
			want:      `{apiVersion: berth.dev/v1alpha1, kind: AdmissionCheck, metadata: {name: mk}, spec: {controllerName: kueue.x-k8s.io/multikueue}}`,
			keep:      true,
			wantNotes: []string{"AdmissionCheck mk: spec.controllerName: kueue.x-k8s.io/multikueue has no counterpart in Berth yet; the check stays inactive"},
		},
		"Kueue's Workloads are Kueue's": {
			in:        `{apiVersion: kueue.x-k8s.io/v1beta2, kind: Workload, metadata: {name: job-x, namespace: team}}`,
			wantNotes: []string{"Workload team/job-x: kind: Berth makes its own Workload for each job it holds; left out"},
		},
		"a kind Berth has not": {
			in:        `{apiVersion: kueue.x-k8s.io/v1beta2, kind: Topology, metadata: {name: default}, spec: {levels: [{nodeLabel: kubernetes.io/hostname}]}}`,
			wantNotes: []string{"Topology default: kind: Berth has no Topology yet; left out"},
		},
		"a flavor's topology": {
			in:        `{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: tas}, spec: {nodeLabels: {pool: a}, topologyName: default}}`,
			want:      `{apiVersion: berth.dev/v1alpha1, kind: ResourceFlavor, metadata: {name: tas}, spec: {nodeLabels: {pool: a}}}`,
			keep:      true,
			wantNotes: []string{"ResourceFlavor tas: spec.topologyName: Berth has no topology-aware admission yet; removed"},
		},
		"a Job's labels, its template's, and a key Berth does not read": {
			in: `{apiVersion: batch/v1, kind: Job, metadata: {name: train, namespace: ml,
  labels: {kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/priority-class: high, app: train},
  annotations: {kueue.x-k8s.io/job-min-parallelism: "2"}},
spec: {template: {metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: rack}}}}}`,
			want: `{apiVersion: batch/v1, kind: Job, metadata: {name: train, namespace: ml,
  labels: {berth.dev/queue-name: q, berth.dev/priority-class: high, app: train},
  annotations: {berth.dev/job-min-parallelism: "2"}},
spec: {template: {metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: rack}}}}}`,
			keep:      true,
			wantNotes: []string{"Job ml/train: spec.template.metadata.annotations[kueue.x-k8s.io/podset-required-topology]: Berth does not read it; left as it is"},
		},
		"a pod group": {
			in: `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ml,
  labels: {kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/pod-group-name: g}, annotations: {kueue.x-k8s.io/pod-group-total-count: "2"}}}`,
			want: `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ml,
  labels: {berth.dev/queue-name: q, berth.dev/pod-group-name: g}, annotations: {berth.dev/pod-group-total-count: "2"}}}`,
			keep: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := decode(t, tc.in)
			keep, notes := Convert(obj)
			if keep != tc.keep {
				t.Fatalf("keep = %v, want %v", keep, tc.keep)
			}
			var got []string
			for _, n := range notes {
				got = append(got, n.String())
			}
			if diff := cmp.Diff(tc.wantNotes, got); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if !keep {
				return
			}
			if diff := cmp.Diff(decode(t, tc.want).Object, obj.Object); diff != "" {
				t.Errorf("converted (-want +got):\n%s", diff)
			}
		})
	}
}
