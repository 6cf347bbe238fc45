package trainjob

import (
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

func replicatedJob(name, step, cpu string, replicas, parallelism int32) jobsetapi.ReplicatedJob {
	rj := jobsetapi.ReplicatedJob{Name: name, Replicas: replicas, Template: batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{Parallelism: ptr.To(parallelism), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "node", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}},
		}}},
	}}
	if step != "" {
		rj.Template.Labels = map[string]string{ancestorLabel: step}
	}
	return rj
}

func TestPodSets(t *testing.T) {
	rt := &trainer.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "torch"},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{NumNodes: ptr.To[int32](2)},
			Template: trainer.JobSetTemplateSpec{Spec: jobsetapi.JobSetSpec{ReplicatedJobs: []jobsetapi.ReplicatedJob{
				replicatedJob("dataset-initializer", "dataset-initializer", "500m", 1, 1),
				replicatedJob("node", ancestorTrainer, "1", 3, 1),
			}}},
		},
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(rt).Build()
	cases := map[string]struct {
		trainer   *trainer.Trainer
		overrides []trainer.PodSpecOverride
		want      map[string]int32
		cpu       string
		selector  map[string]string
	}{
		"the runtime's numNodes": {want: map[string]int32{"dataset-initializer": 1, "node": 2}, cpu: "1"},
		"the TrainJob's numNodes and resources": {
			trainer: &trainer.Trainer{NumNodes: ptr.To[int32](4), ResourcesPerNode: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}},
			want: map[string]int32{"dataset-initializer": 1, "node": 4}, cpu: "8",
		},
		"an override merges into the jobs it names": {
			overrides: []trainer.PodSpecOverride{{TargetJobs: []trainer.PodSpecOverrideTargetJob{{Name: "node"}}, NodeSelector: map[string]string{"zone": "a"}}},
			want:      map[string]int32{"dataset-initializer": 1, "node": 2}, cpu: "1", selector: map[string]string{"zone": "a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tj := &TrainJob{TrainJob: &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns"},
				Spec:       trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: "torch"}, Trainer: tc.trainer, PodSpecOverrides: tc.overrides, Suspend: ptr.To(true)},
			}}
			if err := tj.Resolve(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			podSets, err := tj.PodSets()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int32{}
			var node berthv1alpha1.PodSet
			for _, ps := range podSets {
				got[ps.Name] = ps.Count
				if ps.Name == "node" {
					node = ps
				}
			}
			if len(got) != len(tc.want) || got["node"] != tc.want["node"] || got["dataset-initializer"] != tc.want["dataset-initializer"] {
				t.Errorf("counts %v, want %v (the trainer step runs one Job, whatever the runtime's replicas)", got, tc.want)
			}
			if cpu := node.Template.Spec.Containers[0].Resources.Requests.Cpu(); !cpu.Equal(resource.MustParse(tc.cpu)) {
				t.Errorf("node cpu %s, want %s", cpu, tc.cpu)
			}
			if tc.selector != nil && node.Template.Spec.NodeSelector["zone"] != tc.selector["zone"] {
				t.Errorf("node selector %v, want %v", node.Template.Spec.NodeSelector, tc.selector)
			}
		})
	}
}

func TestResolveNamesTheMissingRuntime(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme(t)).Build()
	for _, ref := range []trainer.RuntimeRef{
		{Name: "absent"},
		{Name: "absent", Kind: ptr.To(trainer.TrainingRuntimeKind)},
		{Name: "x", Kind: ptr.To("Other")},
	} {
		tj := &TrainJob{TrainJob: &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns"},
			Spec: trainer.TrainJobSpec{RuntimeRef: ref, Suspend: ptr.To(true)}}}
		err := tj.Resolve(t.Context(), c)
		ferr, ok := err.(*field.Error)
		if !ok || (ferr.Field != "spec.runtimeRef.name" && ferr.Field != "spec.runtimeRef.kind") {
			t.Errorf("runtimeRef %+v: %v; want a field error naming spec.runtimeRef", ref, err)
		}
	}
}

func TestValidateOnUpdateKeepsTheQueueHandedDown(t *testing.T) {
	labels := map[string]string{berthv1alpha1.QueueNameLabel: "main"}
	old := &TrainJob{TrainJob: &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Labels: labels}}}
	old.DefaultOnCreate()
	cur := &TrainJob{TrainJob: old.DeepCopy()}
	if errs := cur.ValidateOnUpdate(old); len(errs) != 0 {
		t.Errorf("an unchanged TrainJob refused: %v", errs)
	}
	delete(cur.Spec.Labels, berthv1alpha1.QueueNameLabel)
	if errs := cur.ValidateOnUpdate(old); len(errs) != 1 || errs[0].Field != "spec.labels[berth.dev/queue-name]" {
		t.Errorf("dropping the handed-down queue: %v; want refused naming spec.labels[berth.dev/queue-name]", errs)
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := trainer.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := jobsetapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
