package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
	podgroup "github.com/berth-dev/berth/pkg/jobs/pod"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/test/util/apiserver"
)

// workerCluster is a worker of the multi-cluster tests: its own API
// server, and its own Berth.
type workerCluster struct {
	name   string
	server *apiserver.Server
	// kubeconfig is the administrator's kubeconfig of server.
	kubeconfig []byte
}

// startWorker starts a worker: an API server with Berth's and JobSet's
// CRDs, a Berth for Jobs, JobSets and pods, a flavor and a ClusterQueue of gpus
// GPUs with LocalQueue main in namespace ns.
func startWorker(t testing.TB, name, ns, gpus string) *workerCluster {
	t.Helper()
	jobset, err := apiserver.ModuleDir("sigs.k8s.io/jobset")
	if err != nil {
		t.Fatal(err)
	}
	s, err := apiserver.Start(apiserver.WithCRDs(filepath.Join(jobset, "config", "components", "crd", "bases")),
		apiserver.WithWebhooks(filepath.Join(apiserver.RepoRoot(), "config", "webhook")))
	if err != nil {
		t.Fatal(err)
	}
	w := &workerCluster{name: name, server: s}
	t.Cleanup(func() { _ = s.Stop() })
	if w.kubeconfig, err = os.ReadFile(s.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	stop, err := runManager(s, webhook.Options{Host: s.Webhook.LocalServingHost, Port: s.Webhook.LocalServingPort, CertDir: s.Webhook.LocalServingCertDir}, func(o *controllermanager.Options) {
		o.Integrations = []string{"batch/job", "jobset.x-k8s.io/jobset", "pod"}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if err := waitForWebhook(s.Client); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	flavor := utiltesting.MakeResourceFlavor("gpu")
	cq := utiltesting.MakeClusterQueue("gpus").ResourceGroup(utiltesting.MakeFlavorQuotas("gpu").Resource("cpu", gpus).Obj()).Obj()
	cq.Spec.NamespaceSelector = &metav1.LabelSelector{}
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, flavor, cq, utiltesting.MakeLocalQueue("main", ns, cq.Name)} {
		if err := s.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// setKubeconfig writes the worker's kubeconfig Secret in the manager, or
// one pointing at a closed port when broken, as a worker that stopped
// answering looks.
func (w *workerCluster) setKubeconfig(t testing.TB, broken bool) {
	t.Helper()
	data := w.kubeconfig
	if broken {
		data = []byte(strings.Replace(string(data), "server: https://127.0.0.1:", "server: https://127.0.0.1:1#", 1))
	}
	waitFor(t, "the kubeconfig Secret of "+w.name, func(ctx context.Context) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: "berth-system"}}
		err := server.Client.Get(ctx, client.ObjectKeyFromObject(s), s)
		if apierrors.IsNotFound(err) {
			s.Data = map[string][]byte{berthv1alpha1.WorkerClusterKubeConfigKey: data}
			return server.Client.Create(ctx, s)
		} else if err != nil {
			return err
		}
		s.Data = map[string][]byte{berthv1alpha1.WorkerClusterKubeConfigKey: data}
		return server.Client.Update(ctx, s)
	})
}

// copyOf waits until the worker's copy of job passes check, and returns it.
func (w *workerCluster) copyOf(t *testing.T, job *batchv1.Job, what string, check func(*batchv1.Job, error) error) *batchv1.Job {
	t.Helper()
	c := &batchv1.Job{}
	waitFor(t, w.name+": "+what, func(ctx context.Context) error {
		return check(c, w.server.Client.Get(ctx, client.ObjectKeyFromObject(job), c))
	})
	return c
}

// runs checks that a copy exists and its worker's Berth runs it.
func runs(c *batchv1.Job, err error) error {
	if err != nil {
		return err
	}
	if ptr.Deref(c.Spec.Suspend, true) {
		return fmt.Errorf("the copy is suspended")
	}
	return nil
}

// gone checks that a copy does not exist, or is being deleted.
func gone(c *batchv1.Job, err error) error {
	if apierrors.IsNotFound(err) || err == nil && !c.DeletionTimestamp.IsZero() {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("the copy is there")
}

// dispatchedTo checks that the manager's Workload was dispatched to worker.
func dispatchedTo(worker string) func(*berthv1alpha1.Workload) error {
	return func(wl *berthv1alpha1.Workload) error {
		if wl.Status.ClusterName != worker || !workload.IsAdmitted(wl) {
			return fmt.Errorf("clusterName %q, checks %+v, conditions %v", wl.Status.ClusterName, wl.Status.AdmissionChecks, wl.Status.Conditions)
		}
		return nil
	}
}

// multiClusterQueue makes in the manager the WorkerClusters of workers
// and their Secrets, a MultiClusterConfig and an AdmissionCheck of
// berth.dev/multicluster naming them, and a ClusterQueue of cpus CPUs with
// the check, whose name it returns.
func multiClusterQueue(t testing.TB, ns, cpus string, workers ...*workerCluster) string {
	t.Helper()
	var names []string
	for _, w := range workers {
		w.setKubeconfig(t, false)
		wc := &berthv1alpha1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: w.name},
			Spec: berthv1alpha1.WorkerClusterSpec{KubeConfig: berthv1alpha1.KubeConfig{Location: w.name}}}
		mustCreate(t, wc)
		t.Cleanup(func() {
			_ = server.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: "berth-system"}})
		})
		names = append(names, w.name)
	}
	config := &berthv1alpha1.MultiClusterConfig{ObjectMeta: metav1.ObjectMeta{Name: unique("workers")},
		Spec: berthv1alpha1.MultiClusterConfigSpec{Clusters: names}}
	check := &berthv1alpha1.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: unique("dispatch")}, Spec: berthv1alpha1.AdmissionCheckSpec{
		ControllerName: berthv1alpha1.MultiClusterControllerName,
		Parameters:     &berthv1alpha1.AdmissionCheckParametersReference{APIGroup: "berth.dev", Kind: "MultiClusterConfig", Name: config.Name},
	}}
	flavor, cq := cpuQueue(cpus)
	cq.Spec.AdmissionChecks = []berthv1alpha1.AdmissionCheckReference{berthv1alpha1.AdmissionCheckReference(check.Name)}
	mustCreate(t, config, check, flavor, cq)
	return cq.Name
}

// cpuQueue is a ClusterQueue of cpus CPUs, for any namespace, and its
// flavor.
func cpuQueue(cpus string) (*berthv1alpha1.ResourceFlavor, *berthv1alpha1.ClusterQueue) {
	flavor := utiltesting.MakeResourceFlavor(unique("cpu"))
	cq := utiltesting.MakeClusterQueue(unique("cq")).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor.Name).Resource("cpu", cpus).Obj()).Obj()
	cq.Spec.NamespaceSelector = &metav1.LabelSelector{}
	return flavor, cq
}

// TestMultiClusterDispatch runs a manager and two workers, each a real
// API server with its own Berth. A Job that needs 6 CPUs goes to the
// worker with room for it; its copy in the other is deleted; its copy's
// status shows on the manager's Job; finished there, it is finished here.
// A JobSet and a pod group go the same way (dispatchPodGroup).
// A Job whose copy its worker's Berth evicts is requeued here and
// dispatched again. A second Job's worker stops answering: after the timeout it is
// requeued and runs in the other; when the lost worker answers again, the
// copy left there is deleted. Deleting the Job here deletes its copy
// there.
func TestMultiClusterDispatch(t *testing.T) {
	withManager(t, func(o *controllermanager.Options) {
		o.MultiCluster.CheckInterval = time.Second
		o.MultiCluster.WorkerLostTimeout = 3 * time.Second
	})
	ns := namespace(t, nil)
	small := startWorker(t, unique("small"), ns, "4")
	large := startWorker(t, unique("large"), ns, "8")
	cq := multiClusterQueue(t, ns, "16", small, large)
	waitForClusterQueue(t, cq, activeIs(metav1.ConditionTrue, berthv1alpha1.ReasonReady, ""))
	mustCreate(t, utiltesting.MakeLocalQueue("main", ns, cq))

	// A job that names Berth's dispatch in a queue that does not dispatch
	// would wait with nothing to run it: refused, the field named.
	flavor, plain := cpuQueue("4")
	mustCreate(t, flavor, plain, utiltesting.MakeLocalQueue("plain", ns, plain.Name))
	stray := utiltesting.MakeJob("stray", ns).Queue("plain").Request("cpu", "1").Obj()
	stray.Spec.ManagedBy = ptr.To(berthv1alpha1.MultiClusterControllerName)
	if err := server.Client.Create(ctxFor(t), stray); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.managedBy") {
		t.Fatalf("creating a Job managed by %s in a queue that does not dispatch: %v, want Invalid naming spec.managedBy", berthv1alpha1.MultiClusterControllerName, err)
	}

	// Dispatched to the worker with room.
	job := utiltesting.MakeJob("train", ns).Queue("main").Parallelism(6).Request("cpu", "1").Obj()
	mustCreate(t, job)
	if got := ptr.Deref(job.Spec.ManagedBy, ""); got != berthv1alpha1.MultiClusterControllerName {
		t.Fatalf("the webhook set spec.managedBy %q, want %s", got, berthv1alpha1.MultiClusterControllerName)
	}
	workloadOf(t, job, "dispatched to the large worker", dispatchedTo(large.name))
	jobState(t, job, false)
	c := large.copyOf(t, job, "the copy runs", runs)
	if c.Labels[berthv1alpha1.MultiClusterOriginLabel] != "berth" || c.Spec.ManagedBy != nil {
		t.Fatalf("copy labels %v managedBy %v", c.Labels, c.Spec.ManagedBy)
	}
	small.copyOf(t, job, "no copy in the small worker", gone)
	remote := &berthv1alpha1.Workload{}
	key := client.ObjectKey{Namespace: ns, Name: jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), c.Name, string(c.UID))}
	if err := large.server.Client.Get(ctxFor(t), key, remote); err != nil || remote.Labels[berthv1alpha1.MultiClusterOriginLabel] != "berth" {
		t.Fatalf("the worker's Workload %v: labels %v", err, remote.Labels)
	}

	// Its status mirrored, to the end.
	waitFor(t, "the copy's pods ready", func(ctx context.Context) error {
		cur := &batchv1.Job{}
		if err := large.server.Client.Get(ctx, client.ObjectKeyFromObject(job), cur); err != nil {
			return err
		}
		cur.Status.StartTime = ptr.To(metav1.Now())
		cur.Status.Active, cur.Status.Ready = 6, ptr.To[int32](6)
		return large.server.Client.Status().Update(ctx, cur)
	})
	workloadOf(t, job, "pods ready in the manager", conditionIs(berthv1alpha1.WorkloadPodsReady, metav1.ConditionTrue, ""))
	finishJobIn(t, large.server.Client, c)
	workloadOf(t, job, "finished in the manager", conditionIs(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, berthv1alpha1.ReasonSucceeded))
	large.copyOf(t, job, "the finished copy deleted", gone)

	// A JobSet too.
	js := &jobsetapi.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: ns, Labels: map[string]string{berthv1alpha1.QueueNameLabel: "main"}},
		Spec:       jobsetapi.JobSetSpec{ReplicatedJobs: []jobsetapi.ReplicatedJob{replicatedJob("driver", 1, 1), replicatedJob("workers", 5, 1)}},
	}
	mustCreate(t, js)
	if got := ptr.Deref(js.Spec.ManagedBy, ""); got != berthv1alpha1.MultiClusterControllerName {
		t.Fatalf("the webhook set the JobSet's spec.managedBy %q", got)
	}
	jsWorkload := func(what string, check func(*berthv1alpha1.Workload) error) {
		t.Helper()
		waitFor(t, what, func(ctx context.Context) error {
			cur := &jobsetapi.JobSet{}
			if err := server.Client.Get(ctx, client.ObjectKeyFromObject(js), cur); err != nil {
				return err
			}
			wl := &berthv1alpha1.Workload{}
			key := client.ObjectKey{Namespace: ns, Name: jobframework.WorkloadName(jobsetapi.GroupVersion.WithKind("JobSet"), cur.Name, string(cur.UID))}
			if err := server.Client.Get(ctx, key, wl); err != nil {
				return err
			}
			return check(wl)
		})
	}
	jsWorkload("the JobSet dispatched to the large worker", dispatchedTo(large.name))
	jsCopy := &jobsetapi.JobSet{}
	waitFor(t, "the JobSet's copy runs in the large worker", func(ctx context.Context) error {
		if err := large.server.Client.Get(ctx, client.ObjectKeyFromObject(js), jsCopy); err != nil {
			return err
		}
		if ptr.Deref(jsCopy.Spec.Suspend, true) || jsCopy.Spec.ManagedBy != nil {
			return fmt.Errorf("suspend %v managedBy %v", jsCopy.Spec.Suspend, jsCopy.Spec.ManagedBy)
		}
		return nil
	})
	waitFor(t, "completing the JobSet's copy", func(ctx context.Context) error {
		if err := large.server.Client.Get(ctx, client.ObjectKeyFromObject(js), jsCopy); err != nil {
			return err
		}
		meta.SetStatusCondition(&jsCopy.Status.Conditions, metav1.Condition{Type: string(jobsetapi.JobSetCompleted), Status: metav1.ConditionTrue, Reason: "AllJobsCompleted", Message: "done"})
		return large.server.Client.Status().Update(ctx, jsCopy)
	})
	jsWorkload("the JobSet finished in the manager", conditionIs(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, berthv1alpha1.ReasonSucceeded))
	waitFor(t, "the JobSet's copy deleted", func(ctx context.Context) error {
		err := large.server.Client.Get(ctx, client.ObjectKeyFromObject(js), &jobsetapi.JobSet{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the copy is there (%v)", err)
	})

	dispatchPodGroup(t, ns, small, large)
	dispatchPod(t, ns, small, large)

	// Evicted in its worker (deactivated there): requeued here, and
	// dispatched again.
	evicted := utiltesting.MakeJob("evicted", ns).Queue("main").Request("cpu", "1").Obj()
	mustCreate(t, evicted)
	var at *workerCluster
	workloadOf(t, evicted, "the evicted job dispatched", func(wl *berthv1alpha1.Workload) error {
		for _, w := range []*workerCluster{small, large} {
			if wl.Status.ClusterName == w.name && workload.IsAdmitted(wl) {
				at = w
				return nil
			}
		}
		return fmt.Errorf("not dispatched: checks %+v", wl.Status.AdmissionChecks)
	})
	evictedCopy := at.copyOf(t, evicted, "the evicted job's copy runs", runs)
	waitFor(t, "deactivating the copy's Workload in "+at.name, func(ctx context.Context) error {
		remote := &berthv1alpha1.Workload{}
		key := client.ObjectKey{Namespace: ns, Name: jobframework.WorkloadName(batchv1.SchemeGroupVersion.WithKind("Job"), evictedCopy.Name, string(evictedCopy.UID))}
		if err := at.server.Client.Get(ctx, key, remote); err != nil {
			return err
		}
		remote.Spec.Active = ptr.To(false)
		return at.server.Client.Update(ctx, remote)
	})
	again := workloadOf(t, evicted, "requeued in the manager and dispatched again", func(wl *berthv1alpha1.Workload) error {
		if wl.Status.RequeueState == nil || ptr.Deref(wl.Status.RequeueState.Count, 0) < 1 || wl.Status.ClusterName == "" || !workload.IsAdmitted(wl) {
			return fmt.Errorf("requeue state %+v, clusterName %q, checks %+v, conditions %v", wl.Status.RequeueState, wl.Status.ClusterName, wl.Status.AdmissionChecks, wl.Status.Conditions)
		}
		return nil
	})
	if err := server.Client.Delete(ctxFor(t), evicted, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*workerCluster{small, large} {
		if w.name == again.Status.ClusterName {
			w.copyOf(t, evicted, "the copy deleted with the job", gone)
		}
		// The copies' Workloads go with them, deleted by Berth: this API
		// server has no garbage collector, a worker that came back may not
		// have one yet, and until one runs they may hold quota there.
		waitFor(t, w.name+": the Workloads of the evicted job's copies deleted", func(ctx context.Context) error {
			list := &berthv1alpha1.WorkloadList{}
			if err := w.server.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, wl := range list.Items {
				if slices.ContainsFunc(wl.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Job" && o.Name == evicted.Name }) {
					return fmt.Errorf("Workload %s is there (deleted at %v)", wl.Name, wl.DeletionTimestamp)
				}
			}
			return nil
		})
	}

	// A worker lost: its job runs in the other one.
	second := utiltesting.MakeJob("second", ns).Queue("main").Parallelism(2).Request("cpu", "1").Obj()
	mustCreate(t, second)
	var first, other *workerCluster
	workloadOf(t, second, "the second job dispatched", func(wl *berthv1alpha1.Workload) error {
		switch wl.Status.ClusterName {
		case small.name:
			first, other = small, large
		case large.name:
			first, other = large, small
		default:
			return fmt.Errorf("not dispatched: checks %+v", wl.Status.AdmissionChecks)
		}
		return nil
	})
	first.copyOf(t, second, "the second job's copy runs", runs)
	first.setKubeconfig(t, true)
	workloadOf(t, second, "requeued and dispatched to the other worker", dispatchedTo(other.name))
	other.copyOf(t, second, "the second job runs in the other worker", runs)
	first.copyOf(t, second, "the lost copy still there while its worker is lost", func(_ *batchv1.Job, err error) error { return err })
	first.setKubeconfig(t, false)
	first.copyOf(t, second, "the lost copy deleted when the worker returns", gone)
	other.copyOf(t, second, "the second job still runs in the other worker", runs)

	// Deleted here, deleted there.
	if err := server.Client.Delete(ctxFor(t), second, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	other.copyOf(t, second, "the copy deleted with the job", gone)
}

// dispatchPodGroup dispatches a group of two 3-CPU pods, which only the
// large worker has room for, as dispatchPods says.
func dispatchPodGroup(t *testing.T, ns string, small, large *workerCluster) {
	t.Helper()
	pods := []*corev1.Pod{
		utiltesting.MakePod("infer-a", ns).Queue("main").Group("infer", "2").Request(corev1.ResourceCPU, "3").Obj(),
		utiltesting.MakePod("infer-b", ns).Queue("main").Group("infer", "2").Request(corev1.ResourceCPU, "3").Obj(),
	}
	mustCreate(t, pods[0], pods[1])
	dispatchPods(t, pods, small, large, true,
		func(what string, check func(*berthv1alpha1.Workload) error) {
			groupWorkload(t, ns, "infer", what, check)
		},
		func(context.Context) (string, error) { return podgroup.GroupWorkloadName(ns, "infer"), nil })
}

// dispatchPod dispatches a plain pod of 6 CPUs, which only the large
// worker has room for: a group of one, as dispatchPods says, but not
// evicted. Its copy's Workload there is named for the copy's UID, so a
// copy made again has a new one, and the old one goes with its pod by
// the worker's garbage collector, which this API server has not.
func dispatchPod(t *testing.T, ns string, small, large *workerCluster) {
	t.Helper()
	p := utiltesting.MakePod("solo", ns).Queue("main").Request(corev1.ResourceCPU, "6").Obj()
	mustCreate(t, p)
	dispatchPods(t, []*corev1.Pod{p}, small, large, false,
		func(what string, check func(*berthv1alpha1.Workload) error) { podWorkload(t, p, what, check) }, nil)
}

// dispatchPods follows pods, which only the large worker has room for,
// through their dispatch: they stay at their gate in the manager
// throughout, while their copies run in the worker and their status is
// mirrored. With evict, evicted there (their Workload, named by remote,
// deactivated), they are requeued here, their status put back to held,
// and dispatched again. Their copies succeed, and their Workload (local)
// finishes here.
func dispatchPods(t *testing.T, pods []*corev1.Pod, small, large *workerCluster, evict bool,
	local func(what string, check func(*berthv1alpha1.Workload) error), remote func(context.Context) (string, error)) {
	t.Helper()
	ns := pods[0].Namespace
	heldHere := func(what string, check func(*corev1.Pod) error) {
		t.Helper()
		for _, p := range pods {
			podState(t, p, what, func(cur *corev1.Pod) error {
				if err := stillGated(cur); err != nil {
					return err
				}
				return check(cur)
			})
		}
	}
	copies := func(w *workerCluster, what string, check func(*corev1.Pod, error) error) {
		t.Helper()
		for _, p := range pods {
			waitFor(t, w.name+": "+what+" ("+p.Name+")", func(ctx context.Context) error {
				c := &corev1.Pod{}
				return check(c, w.server.Client.Get(ctx, client.ObjectKeyFromObject(p), c))
			})
		}
	}
	copyRuns := func(c *corev1.Pod, err error) error {
		if err != nil {
			return err
		}
		if gated(c) || c.Labels[berthv1alpha1.MultiClusterOriginLabel] != "berth" {
			return fmt.Errorf("gates %v, labels %v", c.Spec.SchedulingGates, c.Labels)
		}
		return nil
	}
	// playKubelet sets the phase of the copies in w, ready while running.
	playKubelet := func(w *workerCluster, phase corev1.PodPhase) {
		t.Helper()
		for _, p := range pods {
			waitFor(t, fmt.Sprintf("%s: copy %s %s", w.name, p.Name, phase), func(ctx context.Context) error {
				c := &corev1.Pod{}
				if err := w.server.Client.Get(ctx, client.ObjectKeyFromObject(p), c); err != nil {
					return err
				}
				ready := corev1.ConditionFalse
				if phase == corev1.PodRunning {
					ready = corev1.ConditionTrue
				}
				c.Status.Phase = phase
				c.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
				c.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Spec.Containers[0].Name, Ready: ready == corev1.ConditionTrue}}
				return w.server.Client.Status().Update(ctx, c)
			})
		}
	}
	local("dispatched to the large worker", dispatchedTo(large.name))
	copies(large, "the copies run", copyRuns)
	copies(small, "no copies in the small worker", func(c *corev1.Pod, err error) error {
		if apierrors.IsNotFound(err) || err == nil && !c.DeletionTimestamp.IsZero() {
			return nil
		}
		return fmt.Errorf("the copy is there (%v)", err)
	})
	playKubelet(large, corev1.PodRunning)
	heldHere("held here, with its copy's status", func(cur *corev1.Pod) error {
		if cur.Status.Phase != corev1.PodRunning || len(cur.Status.ContainerStatuses) != 1 {
			return fmt.Errorf("status %+v", cur.Status)
		}
		return nil
	})
	local("the pods ready in the manager", conditionIs(berthv1alpha1.WorkloadPodsReady, metav1.ConditionTrue, ""))

	if evict {
		// Evicted there: requeued here, held again, dispatched again.
		waitFor(t, "deactivating the Workload in the large worker", func(ctx context.Context) error {
			name, err := remote(ctx)
			if err != nil {
				return err
			}
			wl := &berthv1alpha1.Workload{}
			if err := large.server.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, wl); err != nil {
				return err
			}
			wl.Spec.Active = ptr.To(false)
			return large.server.Client.Update(ctx, wl)
		})
		local("requeued in the manager", func(wl *berthv1alpha1.Workload) error {
			if wl.Status.RequeueState == nil || ptr.Deref(wl.Status.RequeueState.Count, 0) < 1 {
				return fmt.Errorf("requeue state %+v, conditions %v", wl.Status.RequeueState, wl.Status.Conditions)
			}
			return nil
		})
		heldHere("held here, its status put back", func(cur *corev1.Pod) error {
			if cur.Status.Phase != corev1.PodPending || len(cur.Status.ContainerStatuses) != 0 {
				return fmt.Errorf("status %+v", cur.Status)
			}
			return nil
		})
		local("dispatched again", dispatchedTo(large.name))
		copies(large, "the new copies run", func(c *corev1.Pod, err error) error {
			if err := copyRuns(c, err); err != nil {
				return err
			}
			if got := c.Annotations[berthv1alpha1.MultiClusterAttemptAnnotation]; got == "0" {
				return fmt.Errorf("the copy of attempt %s", got)
			}
			return nil
		})
	}
	playKubelet(large, corev1.PodSucceeded)
	local("finished in the manager", conditionIs(berthv1alpha1.WorkloadFinished, metav1.ConditionTrue, berthv1alpha1.ReasonSucceeded))
	heldHere("held here, succeeded", func(cur *corev1.Pod) error {
		if cur.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("phase %s", cur.Status.Phase)
		}
		return nil
	})
	copies(large, "the finished copies deleted", func(c *corev1.Pod, err error) error {
		if apierrors.IsNotFound(err) || err == nil && !c.DeletionTimestamp.IsZero() {
			return nil
		}
		return fmt.Errorf("the copy is there (%v)", err)
	})
}

// BenchmarkDispatch measures, in one run, how fast the manager admits
// BERTH_DISPATCH_JOBS (200) one-pod Jobs in a ClusterQueue of its own,
// then how fast it admits as many in a ClusterQueue that dispatches them
// to two workers, each a real API server with its own Berth: from the
// first Job created to the last Workload admitted, where a dispatched one
// is admitted once a worker's Berth admitted its copy.
//
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s go test -run '^$' -bench Dispatch -benchtime 1x ./test/integration/controller/
func BenchmarkDispatch(b *testing.B) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("BERTH_DISPATCH_JOBS")); err == nil && v > 0 {
		n = v
	}
	ns := namespace(b, nil)
	capacity := strconv.Itoa(2 * n)
	workers := []*workerCluster{startWorker(b, unique("east"), ns, capacity), startWorker(b, unique("west"), ns, capacity)}
	remote := multiClusterQueue(b, ns, capacity, workers...)
	flavor, local := cpuQueue(capacity)
	mustCreate(b, flavor, local, utiltesting.MakeLocalQueue("local", ns, local.Name), utiltesting.MakeLocalQueue("main", ns, remote))
	waitForClusterQueue(b, remote, activeIs(metav1.ConditionTrue, berthv1alpha1.ReasonReady, ""))
	for b.Loop() {
		single := admitAll(b, ns, "local", n)
		dispatched := admitAll(b, ns, "main", n)
		b.ReportMetric(float64(n)/single.Seconds(), "single-admissions/s")
		b.ReportMetric(float64(n)/dispatched.Seconds(), "dispatched-admissions/s")
		b.ReportMetric(dispatched.Seconds()/single.Seconds(), "dispatch/single-time")
	}
}

// admitAll creates n one-pod Jobs in queue and returns how long it took
// until all their Workloads were admitted.
func admitAll(b *testing.B, ns, queue string, n int) time.Duration {
	b.Helper()
	ctx := b.Context()
	start := time.Now()
	for i := range n {
		job := utiltesting.MakeJob(fmt.Sprintf("%s-%d", queue, i), ns).Queue(queue).Request("cpu", "1").Obj()
		if err := server.Client.Create(ctx, job); err != nil {
			b.Fatal(err)
		}
	}
	for {
		wls := &berthv1alpha1.WorkloadList{}
		if err := server.Client.List(ctx, wls, client.InNamespace(ns), client.MatchingLabels{berthv1alpha1.QueueNameLabel: queue}); err != nil {
			b.Fatal(err)
		}
		admitted := 0
		for i := range wls.Items {
			if workload.IsAdmitted(&wls.Items[i]) {
				admitted++
			}
		}
		if admitted == n {
			return time.Since(start)
		}
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("%d of %d workloads of queue %s admitted after 5 minutes; the first's checks: %+v", admitted, n, queue, wls.Items[0].Status.AdmissionChecks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
