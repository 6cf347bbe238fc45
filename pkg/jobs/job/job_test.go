package job

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/pkg/jobframework"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

func TestPodSets(t *testing.T) {
	cases := map[string]struct {
		job          *batchv1.Job
		wantCount    int32
		wantMinCount *int32
		wantErr      bool
	}{
		"parallelism": {job: utiltesting.MakeJob("j", "ns").Parallelism(4).Obj(), wantCount: 4},
		"fewer completions than pods": {job: func() *batchv1.Job {
			j := utiltesting.MakeJob("j", "ns").Parallelism(4).Obj()
			j.Spec.Completions = ptr.To[int32](2)
			return j
		}(), wantCount: 2},
		"partial admission":  {job: utiltesting.MakeJob("j", "ns").Parallelism(4).MinParallelism(2).Obj(), wantCount: 4, wantMinCount: ptr.To[int32](2)},
		"min equal to count": {job: utiltesting.MakeJob("j", "ns").Parallelism(4).MinParallelism(4).Obj(), wantCount: 4},
		"min above count":    {job: utiltesting.MakeJob("j", "ns").Parallelism(2).MinParallelism(3).Obj(), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := (*Job)(tc.job).PodSets()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff([2]any{tc.wantCount, tc.wantMinCount}, [2]any{got[0].Count, got[0].MinCount}); diff != "" {
				t.Errorf("count and minCount (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunAndRestore(t *testing.T) {
	orig := utiltesting.MakeJob("j", "ns").Parallelism(4).Obj()
	(*Job)(orig).Suspend()
	orig.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
	job := (*Job)(orig.DeepCopy())
	admitted := jobframework.PodSetInfo{
		Name: "main", Count: 3,
		NodeSelector: map[string]string{"zone": "a", "gpu.berth.dev/family": "h100"},
		Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
		Labels:       map[string]string{"berth.dev/workload": "wl"},
	}
	if err := job.RunWithPodSetsInfo([]jobframework.PodSetInfo{admitted}); err != nil {
		t.Fatal(err)
	}
	if job.IsSuspended() || ptr.Deref(job.Spec.Parallelism, 0) != 3 {
		t.Errorf("running job: suspended %v, parallelism %d; want running with 3", job.IsSuspended(), ptr.Deref(job.Spec.Parallelism, 0))
	}
	if diff := cmp.Diff(admitted.NodeSelector, job.Spec.Template.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	job.Suspend()
	original := jobframework.PodSetInfo{Name: "main", Count: 4, NodeSelector: map[string]string{"zone": "a"}}
	if !job.RestorePodSetsInfo([]jobframework.PodSetInfo{original}) {
		t.Error("restore reported no change")
	}
	if diff := cmp.Diff(orig.Spec, job.Spec); diff != "" {
		t.Errorf("restored spec (-want +got):\n%s", diff)
	}
}

func TestFinished(t *testing.T) {
	cases := map[string]struct {
		conditions    []batchv1.JobCondition
		wantFinished  bool
		wantSucceeded bool
	}{
		"running":        {},
		"complete":       {conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}, wantFinished: true, wantSucceeded: true},
		"failed":         {conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}, wantFinished: true},
		"suspended only": {conditions: []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := utiltesting.MakeJob("j", "ns").Obj()
			j.Status.Conditions = tc.conditions
			finished, succeeded, _ := (*Job)(j).Finished()
			if diff := cmp.Diff([2]bool{tc.wantFinished, tc.wantSucceeded}, [2]bool{finished, succeeded}); diff != "" {
				t.Errorf("finished, succeeded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHeldJobsReplacePodsOnceStopped: a Job Berth holds replaces a deleted
// pod only once it has stopped, and its owner cannot change that back.
func TestHeldJobsReplacePodsOnceStopped(t *testing.T) {
	j := (*Job)(utiltesting.MakeJob("j", "ns").Queue("main").Obj())
	j.Suspend()
	if got := ptr.Deref(j.Spec.PodReplacementPolicy, ""); got != batchv1.Failed {
		t.Fatalf("podReplacementPolicy %q, want Failed", got)
	}
	changed := (*Job)((*batchv1.Job)(j).DeepCopy())
	changed.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
	if errs := changed.ValidateOnUpdate(j); len(errs) != 1 || errs[0].Field != "spec.podReplacementPolicy" {
		t.Errorf("back to TerminatingOrFailed: %v, want a refusal naming spec.podReplacementPolicy", errs)
	}
	if errs := (*Job)((*batchv1.Job)(j).DeepCopy()).ValidateOnUpdate(j); len(errs) != 0 {
		t.Errorf("an update that keeps it: %v", errs)
	}
}

// TestChangedPassesWhatTheReconcilerReads: a Job's updates reach the job
// reconciler when they change its metadata, its spec, its conditions or
// its ready, succeeded and failed counts, and not for the Job controller's
// other status updates.
func TestChangedPassesWhatTheReconcilerReads(t *testing.T) {
	base := utiltesting.MakeJob("j", "ns").Queue("main").Obj()
	utiltesting.CheckUpdates(t, changed, base, map[string]utiltesting.UpdateCase[*batchv1.Job]{
		"started": {Change: func(j *batchv1.Job) {
			now := metav1.Now()
			j.Status.StartTime, j.Status.Active, j.Status.Ready = &now, 1, ptr.To[int32](0)
		}},
		"a pod terminating": {Change: func(j *batchv1.Job) { j.Status.Terminating = ptr.To[int32](1) }},
		"unsuspended":       {Change: func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(false) }, Want: true},
		"its pod ready":     {Change: func(j *batchv1.Job) { j.Status.Ready = ptr.To[int32](1) }, Want: true},
		"a pod succeeded":   {Change: func(j *batchv1.Job) { j.Status.Succeeded = 1 }, Want: true},
		"a pod failed":      {Change: func(j *batchv1.Job) { j.Status.Failed = 1 }, Want: true},
		"complete": {Change: func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}, Want: true},
		"relabelled":    {Change: func(j *batchv1.Job) { j.Labels["team"] = "a" }, Want: true},
		"being deleted": {Change: func(j *batchv1.Job) { j.DeletionTimestamp = ptr.To(metav1.Now()) }, Want: true},
	})
}
