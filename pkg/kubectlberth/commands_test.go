package kubectlberth

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// testCluster is two teams' ClusterQueues in cohort org, each 8 H100 GPUs
// (team-b lends at most 4), a LocalQueue main in namespaces a and b, and
// workloads: one admitted in team-a holding 6 GPUs, three waiting there
// (one of them of higher priority, one a job's), one deactivated. With
// groups, two pod groups too: serve, waiting in team-a, and infer, short of
// pods.
func testCluster(t *testing.T, groups bool) []client.Object {
	t.Helper()
	gpu := func(name, cohort, lend string) *berthv1alpha1.ClusterQueue {
		limits := []string{}
		if lend != "" {
			limits = []string{"", lend}
		}
		cq := utiltesting.MakeClusterQueue(name).Cohort(cohort).
			ResourceGroup(utiltesting.MakeFlavorQuotas("h100").Resource("nvidia.com/gpu", "8", limits...).Obj()).Obj()
		cq.Spec.NamespaceSelector = &metav1.LabelSelector{}
		return cq
	}
	teamA := gpu("team-a", "org", "")
	teamA.Status.FlavorsUsage = []berthv1alpha1.FlavorUsage{{Name: "h100", Resources: []berthv1alpha1.ResourceUsage{{Name: "nvidia.com/gpu", Total: resource.MustParse("6")}}}}
	waiting := func(name, ns string, priority int32, created time.Duration, gpus string) *berthv1alpha1.Workload {
		wl := utiltesting.MakeWorkload(name, ns).Queue("main").Priority(priority).Created(created).Request(1, "nvidia.com/gpu", gpus).
			Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
		wl.Status.Conditions[0].Message = "The workload does not fit: podset main: flavor h100: needs " + gpus + " nvidia.com/gpu, 2 available (nominal 8, in use 6)"
		return wl
	}
	job := utiltesting.MakeJob("train", "a").Queue("main").Request("nvidia.com/gpu", "4").Obj()
	job.UID = "uid-train"
	ofJob := waiting(jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), "train", "uid-train"), "a", 0, 3*time.Minute, "4")
	inactive := waiting("parked", "a", 0, 4*time.Minute, "1")
	inactive.Spec.Active = new(bool)

	objs := []client.Object{
		utiltesting.MakeResourceFlavor("h100"), utiltesting.MakeCohort("org").Obj(),
		teamA, gpu("team-b", "org", "4"),
		utiltesting.MakeLocalQueue("main", "a", "team-a"), utiltesting.MakeLocalQueue("main", "b", "team-b"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		utiltesting.MakeWorkloadPriorityClass("high", 100),
		utiltesting.MakeWorkload("running", "a").Queue("main").Request(1, "nvidia.com/gpu", "6").AdmittedIn("team-a", "h100").Obj(),
		waiting("first", "a", 0, time.Minute, "4"),
		waiting("urgent", "a", 100, 2*time.Minute, "4"),
		ofJob, job, inactive,
	}
	if groups {
		groupPod := func(name, group string) *corev1.Pod {
			return utiltesting.MakePod(name, "a").Queue("main").Group(group, "3").Label(berthv1alpha1.ManagedLabel, "true").Gated().Obj()
		}
		ofGroup := waiting("pod-group-serve", "a", 0, 5*time.Minute, "2")
		ofGroup.Labels = map[string]string{berthv1alpha1.PodGroupNameLabel: "serve"}
		objs = append(objs, groupPod("serve-0", "serve"), ofGroup, groupPod("infer-0", "infer"))
	}
	return objs
}

// run runs kubectl berth with args against objs.
func run(t *testing.T, objs []client.Object, args ...string) (string, error) {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	var out, errOut bytes.Buffer
	cmd := newCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, func() (client.Client, error) { return c, nil })
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	return out.String(), err
}

func TestCommands(t *testing.T) {
	manifest := func(gpus string) string {
		path := filepath.Join(t.TempDir(), "job.yaml")
		job := `apiVersion: batch/v1
kind: Job
metadata: {name: new, namespace: b, labels: {berth.dev/queue-name: main}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "` + gpus + `"}}}]
`
		if err := os.WriteFile(path, []byte(job), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A RayJob of a head and two one-GPU workers, in HTTPMode (no
	// submitter): podsets head and gpu.
	rayJob := filepath.Join(t.TempDir(), "rayjob.yaml")
	if err := os.WriteFile(rayJob, []byte(`apiVersion: ray.io/v1
kind: RayJob
metadata: {name: tune, namespace: b, labels: {berth.dev/queue-name: main}}
spec:
  shutdownAfterJobFinishes: true
  submissionMode: HTTPMode
  rayClusterSpec:
    headGroupSpec:
      template: {spec: {containers: [{name: head, image: x}]}}
    workerGroupSpecs:
    - groupName: gpu
      replicas: 2
      template: {spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "1"}}}]}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	notAJob := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(notAJob, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// With fair sharing on, the table shows each queue's weight, from its
	// spec, and its share, as its status reports it.
	fair := func(objs []client.Object) []client.Object {
		for _, o := range objs {
			if cq, ok := o.(*berthv1alpha1.ClusterQueue); ok {
				share := int64(0)
				if cq.Name == "team-a" {
					share = 375
					cq.Spec.FairSharing = &berthv1alpha1.FairSharing{Weight: new(resource.MustParse("2"))}
				}
				cq.Status.FairSharing = &berthv1alpha1.FairSharingStatus{WeightedShare: share}
			}
		}
		return objs
	}
	// With admission fair sharing in team-a, a workload of a second
	// LocalQueue, of lower usage than a/main's, goes first whatever its
	// priority and age.
	admissionFair := func(objs []client.Object) []client.Object {
		for _, o := range objs {
			switch o := o.(type) {
			case *berthv1alpha1.ClusterQueue:
				if o.Name == "team-a" {
					o.Spec.AdmissionScope = &berthv1alpha1.AdmissionScope{AdmissionMode: berthv1alpha1.UsageBasedAdmissionFairSharing}
				}
			case *berthv1alpha1.LocalQueue:
				o.Status.FairSharing = &berthv1alpha1.FairSharingStatus{WeightedShare: 750}
			}
		}
		light := utiltesting.MakeLocalQueue("light", "b", "team-a")
		light.Status.FairSharing = &berthv1alpha1.FairSharingStatus{WeightedShare: 125}
		late := utiltesting.MakeWorkload("late", "b").Queue("light").Priority(-5).Created(10*time.Minute).Request(1, "nvidia.com/gpu", "4").
			Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
		return append(objs, light, late)
	}
	// A workload holding quota in team-a that waits on its admission
	// check.
	checked := func(objs []client.Object) []client.Object {
		wl := utiltesting.MakeWorkload("cloudy", "a").Queue("main").Request(1, "nvidia.com/gpu", "2").AdmittedIn("team-a", "h100").Obj()
		workload.SetCondition(wl, berthv1alpha1.WorkloadAdmitted, metav1.ConditionFalse, berthv1alpha1.ReasonPending, "waiting for admission checks")
		wl.Status.AdmissionChecks = []berthv1alpha1.AdmissionCheckState{{Name: "cloud-h100", State: berthv1alpha1.CheckStatePending,
			Message: "ProvisioningRequest cloudy-cloud-h100-1 accepted; waiting for the capacity"}}
		return append(objs, wl)
	}
	cases := map[string]struct {
		args    []string
		mutate  func([]client.Object) []client.Object
		wantErr string
	}{
		"history-job":                      {args: []string{"history", "job/train", "-n", "a"}, mutate: withHistory},
		"history-job-json":                 {args: []string{"history", "job/train", "-n", "a", "-o", "json"}, mutate: withHistory},
		"usage-fair-sharing":               {args: []string{"usage"}, mutate: fair},
		"positions-clusterqueue":           {args: []string{"positions", "clusterqueue", "team-a"}},
		"positions-admission-fair-sharing": {args: []string{"positions", "clusterqueue", "team-a"}, mutate: admissionFair},
		"positions-clusterqueue-json":      {args: []string{"positions", "clusterqueue", "team-a", "-o", "json"}},
		"positions-localqueue-yaml":        {args: []string{"positions", "localqueue", "main", "-n", "a", "-o", "yaml"}},
		"why-job":                          {args: []string{"why", "job/train", "-n", "a"}},
		"why-job-json":                     {args: []string{"why", "job/train", "-n", "a", "-o", "json"}},
		"why-waiting-on-checks":            {args: []string{"why", "workload/cloudy", "-n", "a"}, mutate: checked},
		"why-inactive":                     {args: []string{"why", "workload/parked", "-n", "a"}},
		"why-pod-of-a-group":               {args: []string{"why", "pod/serve-0", "-n", "a"}},
		"why-rayjob":                       {args: []string{"why", "rayjob/tune", "-n", "a"}, mutate: withRayJob},
		"why-raycluster-of-rayjob":         {args: []string{"why", "raycluster/tune-x7k2p", "-n", "a"}, mutate: withRayJob},
		"why-trainjob":                     {args: []string{"why", "trainjob/llama", "-n", "a"}, mutate: withTrainJob},
		"why-elastic-job-growing":          {args: []string{"why", "job/grow", "-n", "a"}, mutate: withGrowingJob},
		"usage":                            {args: []string{"usage"}},
		"usage-json":                       {args: []string{"usage", "org", "-o", "json"}},
		// urgent, ahead in team-a, borrows 2 of team-b's GPUs in the same
		// cycle: 6 are left for the new job.
		"what-if-admitted":  {args: []string{"what-if", "-f", manifest("6")}},
		"what-if-waits":     {args: []string{"what-if", "-f", manifest("10"), "-o", "json"}},
		"what-if-rayjob":    {args: []string{"what-if", "-f", rayJob}},
		"what-if-not-a-job": {args: []string{"what-if", "-f", notAJob}, wantErr: "ConfigMap is not a kind Berth runs"},
		"missing-queue":     {args: []string{"positions", "cq", "nope"}, wantErr: "ClusterQueue nope not found"},
		"missing-job":       {args: []string{"why", "job/nope", "-n", "a"}, wantErr: "Job nope not found in namespace a"},
		"missing-rayjob":    {args: []string{"why", "rayjob/nope", "-n", "a"}, wantErr: "RayJob nope not found in namespace a"},
		"missing-trainjob":  {args: []string{"why", "trainjob/nope", "-n", "a"}, wantErr: "TrainJob nope not found in namespace a"},
		"bad-kind":          {args: []string{"why", "deployment/x"}, wantErr: "unknown kind deployment"},
		"pod-group-short":   {args: []string{"why", "pod/infer-0", "-n", "a"}, wantErr: "pod group infer has no Workload yet: 1 of its 3 pods exist"},
		"bad-output":        {args: []string{"usage", "-o", "wide"}, wantErr: `unknown output format "wide"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := testCluster(t, strings.HasPrefix(name, "why-pod") || strings.HasPrefix(name, "pod-group"))
			if tc.mutate != nil {
				objs = tc.mutate(objs)
			}
			out, err := run(t, objs, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, name, out)
		})
	}
}

// withRayJob adds RayJob tune in namespace a, whose Workload waits in
// team-a for 4 GPUs.
func withRayJob(objs []client.Object) []client.Object {
	rj := &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Name: "tune", Namespace: "a", UID: "uid-tune", Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}}}
	wl := utiltesting.MakeWorkload(jobframework.WorkloadName(rayv1.GroupVersion.WithKind("RayJob"), "tune", "uid-tune"), "a").Queue("main").
		Created(6*time.Minute).Request(1, "nvidia.com/gpu", "4").
		Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
	wl.Status.Conditions[0].Message = "The workload does not fit: podset gpu: flavor h100: needs 4 nvidia.com/gpu, 2 available (nominal 8, in use 6)"
	// KubeRay's cluster for it runs on its Workload.
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "tune-x7k2p", Namespace: "a", UID: "uid-rc",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "tune", UID: "uid-tune", Controller: new(true)}}}}
	return append(objs, rj, wl, rc)
}

// withTrainJob adds a TrainJob waiting for 32 GPUs, and its Workload.
func withTrainJob(objs []client.Object) []client.Object {
	tj := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: "a", UID: "uid-llama", Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}}}
	wl := utiltesting.MakeWorkload(jobframework.WorkloadName(trainer.GroupVersion.WithKind("TrainJob"), "llama", "uid-llama"), "a").Queue("main").
		Created(3*time.Minute).Request(4, "nvidia.com/gpu", "8").
		Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
	wl.Status.Conditions[0].Message = "The workload does not fit: podset main: flavor h100: needs 32 nvidia.com/gpu, 2 available (nominal 8, in use 6)"
	return append(objs, tj, wl)
}

// withGrowingJob adds an elastic Job admitted for 2 pods, raised to 4,
// whose slice of 2 waits.
func withGrowingJob(objs []client.Object) []client.Object {
	job := utiltesting.MakeJob("grow", "a").Queue("main").Parallelism(4).Request("nvidia.com/gpu", "1").Obj()
	job.UID = "uid-grow"
	job.Annotations = map[string]string{berthv1alpha1.ElasticAnnotation: "true"}
	name := jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), "grow", "uid-grow")
	wl := utiltesting.MakeWorkload(name, "a").Queue("main").Created(5*time.Minute).Request(2, "nvidia.com/gpu", "1").AdmittedIn("team-a", "h100").Obj()
	wl.Status.Conditions[1].Message = "Admitted by ClusterQueue team-a after waiting 2s: main: 2 pods, nvidia.com/gpu on h100"
	slice := utiltesting.MakeWorkload(name+"-slice", "a").Queue("main").Created(time.Minute).Request(2, "nvidia.com/gpu", "1").
		Condition(berthv1alpha1.WorkloadQuotaReserved, metav1.ConditionFalse, berthv1alpha1.ReasonPending, 0).Obj()
	slice.Labels = map[string]string{berthv1alpha1.SliceOfLabel: name}
	slice.Status.Conditions[0].Message = "The workload does not fit: podset main: flavor h100: needs 2 nvidia.com/gpu, 1 available (nominal 8, in use 7)"
	return append(objs, job, wl, slice)
}

// withHistory gives job train's Workload a life: created at 09:00, quota
// reserved and admitted a minute later, preempted at 09:05, requeued, and
// admitted again at 09:06:40, whose events the API server no longer keeps,
// so that only the conditions tell it. An event on another workload is
// not its history.
func withHistory(objs []client.Object) []client.Object {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	name := jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), "train", "uid-train")
	for _, o := range objs {
		wl, ok := o.(*berthv1alpha1.Workload)
		if !ok || wl.Name != name {
			continue
		}
		wl.UID = "uid-wl"
		wl.CreationTimestamp = metav1.NewTime(t0)
		wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "uid-train", Controller: new(true)}}
		wl.Status.Conditions = nil
		wl.Status.Admission = &berthv1alpha1.Admission{ClusterQueue: "team-a"}
		set := func(typ, status, reason, msg string, d time.Duration) {
			wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg,
				LastTransitionTime: metav1.NewTime(at(d))})
		}
		set(berthv1alpha1.WorkloadQuotaReserved, "True", "QuotaReserved", "Quota reserved in ClusterQueue team-a", 400*time.Second)
		set(berthv1alpha1.WorkloadAdmitted, "True", "Admitted", "The workload is admitted", 400*time.Second)
		set(berthv1alpha1.WorkloadEvicted, "False", "QuotaReserved", "Previously: Preempted", 400*time.Second)
		set(berthv1alpha1.WorkloadRequeued, "True", "Preempted", "Requeued after its eviction", 330*time.Second)
	}
	event := func(name, kind, object, uid, reason, note string, d time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "a"}, EventTime: metav1.NewMicroTime(at(d)),
			Reason: reason, Message: note, Type: corev1.EventTypeNormal,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: object, Namespace: "a", UID: types.UID(uid)}}
	}
	preempted := event("e5", "Workload", name, "uid-wl", berthv1alpha1.WorkloadPreempted, "Preempted in ClusterQueue team-a (InClusterQueue): to admit a/urgent, of higher priority", 300*time.Second)
	preempted.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(at(301 * time.Second))}
	return append(objs,
		event("e1", "Job", "train", "uid-train", jobframework.EventCreatedWorkload, "Created Workload a/"+name, 0),
		event("e2", "Workload", name, "uid-wl", berthv1alpha1.WorkloadQuotaReserved, "Quota reserved in ClusterQueue team-a", time.Minute),
		event("e3", "Workload", name, "uid-wl", berthv1alpha1.WorkloadAdmitted, "Admitted by ClusterQueue team-a, flavors h100", time.Minute),
		event("e4", "Job", "train", "uid-train", berthv1alpha1.WorkloadAdmitted, "Admitted by ClusterQueue team-a, flavors h100", time.Minute),
		preempted,
		event("e6", "Workload", name, "uid-wl", berthv1alpha1.WorkloadRequeued, "Requeued after its eviction", 330*time.Second),
		event("e7", "Workload", "first", "uid-first", berthv1alpha1.WorkloadAdmitted, "not this one", 10*time.Second),
	)
}

// compareGolden compares out with testdata/name.golden, which -update
// rewrites.
func compareGolden(t *testing.T, name, out string) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestStopAndResume(t *testing.T) {
	objs := testCluster(t, false)
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	for _, tc := range []struct {
		args []string
		obj  client.Object
		want func(client.Object) bool
	}{
		{[]string{"stop", "clusterqueue", "team-a", "--drain"}, &berthv1alpha1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			func(o client.Object) bool {
				return o.(*berthv1alpha1.ClusterQueue).Spec.StopPolicy == berthv1alpha1.HoldAndDrain
			}},
		{[]string{"resume", "clusterqueue", "team-a"}, &berthv1alpha1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			func(o client.Object) bool {
				return o.(*berthv1alpha1.ClusterQueue).Spec.StopPolicy == berthv1alpha1.None
			}},
		{[]string{"stop", "workload", "first", "-n", "a"}, &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: "a"}},
			func(o client.Object) bool { return !*o.(*berthv1alpha1.Workload).Spec.Active }},
		{[]string{"resume", "workload", "parked", "-n", "a"}, &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "parked", Namespace: "a"}},
			func(o client.Object) bool { return *o.(*berthv1alpha1.Workload).Spec.Active }},
		{[]string{"stop", "localqueue", "main", "-n", "b"}, &berthv1alpha1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "b"}},
			func(o client.Object) bool { return o.(*berthv1alpha1.LocalQueue).Spec.StopPolicy == berthv1alpha1.Hold }},
	} {
		var out bytes.Buffer
		cmd := newCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out}, func() (client.Client, error) { return c, nil })
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(tc.obj), tc.obj); err != nil {
			t.Fatal(err)
		}
		if !tc.want(tc.obj) {
			t.Errorf("%v: %+v", tc.args, tc.obj)
		}
	}
}
