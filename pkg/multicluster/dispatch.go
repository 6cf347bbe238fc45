package multicluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/util/shutdown"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// dispatchConcurrency is how many workloads are dispatched at once.
const dispatchConcurrency = 8

// Dispatcher runs the admission checks of berth.dev/multicluster: see the
// package documentation.
type Dispatcher struct {
	client      client.Client
	writer      workloadwriter.Writer
	workers     *workers
	origin      string
	lostTimeout time.Duration
}

// +kubebuilder:rbac:groups=batch,resources=jobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=berth.dev,resources=multiclusterconfigs,verbs=get;list;watch

// SetupWithManager registers the dispatcher with mgr: it follows the
// manager's Workloads that have admission checks, and every change of
// the copies in the workers.
func (d *Dispatcher) SetupWithManager(mgr ctrl.Manager) error {
	// Each dispatch waits on the workers' API servers: several at once.
	b := ctrl.NewControllerManagedBy(mgr).Named("multicluster-dispatch").
		WithOptions(controller.Options{MaxConcurrentReconciles: dispatchConcurrency}).
		For(&berthv1alpha1.Workload{}, builder.WithPredicates(dispatchable)).
		WatchesRawSource(source.Channel(d.workers.events, &handler.EnqueueRequestForObject{}))
	for i := range kinds {
		k := &kinds[i]
		if _, err := mgr.GetRESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				// The manager does not serve the kind: none of its jobs
				// can be dispatched.
				continue
			}
			return err
		}
		// A dispatched Job or JobSet that the manager runs gets its copy's
		// status; a job or pod deleted here is deleted there.
		b = b.Watches(k.newObject(), handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: k.workloadName(obj)}}}
		}), builder.WithPredicates(k.watched))
	}
	return b.Complete(shutdown.UntilStopped(d))
}

// dispatchable passes the events of workloads that have admission checks,
// or were dispatched: the others have no copies.
var dispatchable = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return mayDispatch(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return mayDispatch(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return mayDispatch(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return mayDispatch(e.ObjectOld) || mayDispatch(e.ObjectNew) },
}

func mayDispatch(obj client.Object) bool {
	wl, ok := obj.(*berthv1alpha1.Workload)
	return ok && (len(wl.Status.AdmissionChecks) > 0 || wl.Status.ClusterName != "")
}

// attempt names the workload's current admission: its requeue count.
func attempt(wl *berthv1alpha1.Workload) string {
	n := int32(0)
	if rs := wl.Status.RequeueState; rs != nil {
		n = ptr.Deref(rs.Count, 0)
	}
	return strconv.Itoa(int(n))
}

// Reconcile dispatches one manager Workload, follows its copy, or deletes
// the copies it no longer needs.
func (d *Dispatcher) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wl := &berthv1alpha1.Workload{}
	if err := d.client.Get(ctx, req.NamespacedName, wl); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted here, deleted there.
			return ctrl.Result{}, d.deleteCopies(ctx, req.NamespacedName, nil, nil)
		}
		return ctrl.Result{}, err
	}
	key := client.ObjectKeyFromObject(wl)
	if workload.IsFinished(wl) || !wl.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, d.deleteCopies(ctx, key, nil, nil)
	}
	k, name := ownerOf(wl)
	var members []client.Object
	if k != nil {
		var err error
		if members, err = k.members(ctx, d.client, wl, name); err != nil {
			return ctrl.Result{}, err
		}
		if len(members) == 0 {
			// Deleted here, deleted there, before its Workload is.
			return ctrl.Result{}, d.deleteCopies(ctx, key, nil, nil)
		}
	}
	ac, st, err := d.checkOf(ctx, wl)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ac == nil || !workload.HasQuotaReservation(wl) || workload.IsEvicted(wl) || st.State == berthv1alpha1.CheckStateRetry || st.State == berthv1alpha1.CheckStateRejected {
		// Back in the queue, or on its way: no worker runs it.
		if err := d.deleteCopies(ctx, key, nil, nil); err != nil {
			return ctrl.Result{}, err
		}
		// The status its copies had goes once the manager holds it again:
		// a Job whose status has a start time cannot have its template
		// restored, and a pod's status would say it runs.
		for _, m := range members {
			if ac != nil && k.held(m) && k.clear(m) {
				if err := d.client.Status().Update(ctx, m); client.IgnoreNotFound(err) != nil {
					return ctrl.Result{}, err
				}
			}
		}
		return ctrl.Result{}, nil
	}
	if k == nil {
		return ctrl.Result{}, d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStateRejected,
			Message: fmt.Sprintf("Check %s dispatches Jobs, JobSets, and the pods and pod groups that no controller makes; this workload is none of them", ac.Name)}, "")
	}
	if why := k.refuse(members, ac.Name); why != "" {
		return ctrl.Result{}, d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStateRejected, Message: why}, "")
	}
	if wl.Status.ClusterName != "" {
		return d.follow(ctx, wl, st, k, members)
	}
	clusters, why, err := d.clustersOf(ctx, ac)
	if err != nil {
		return ctrl.Result{}, err
	}
	if why != "" {
		return ctrl.Result{}, d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStatePending, Message: why}, "")
	}
	return d.dispatch(ctx, wl, st, k, members, clusters)
}

// checkOf is wl's check of berth.dev/multicluster and its state, nil when
// it has none.
func (d *Dispatcher) checkOf(ctx context.Context, wl *berthv1alpha1.Workload) (*berthv1alpha1.AdmissionCheck, *berthv1alpha1.AdmissionCheckState, error) {
	for i := range wl.Status.AdmissionChecks {
		st := &wl.Status.AdmissionChecks[i]
		ac := &berthv1alpha1.AdmissionCheck{}
		if err := d.client.Get(ctx, types.NamespacedName{Name: string(st.Name)}, ac); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, nil, err
		}
		if ac.Spec.ControllerName == berthv1alpha1.MultiClusterControllerName {
			return ac, st, nil
		}
	}
	return nil, nil, nil
}

// clustersOf are the worker clusters of ac's MultiClusterConfig, or why
// there are none.
func (d *Dispatcher) clustersOf(ctx context.Context, ac *berthv1alpha1.AdmissionCheck) ([]string, string, error) {
	cfg, why, err := configOf(ctx, d.client, ac)
	if err != nil || why != "" {
		return nil, why, err
	}
	return cfg.Spec.Clusters, "", nil
}

// setCheck writes the state of wl's check, and the worker it was
// dispatched to.
func (d *Dispatcher) setCheck(ctx context.Context, wl *berthv1alpha1.Workload, st berthv1alpha1.AdmissionCheckState, cluster string) error {
	_, err := workloadwriter.Apply(ctx, d.writer, wl, func(w *berthv1alpha1.Workload) bool {
		changed := workload.SetCheckState(w, st)
		if cluster != "" && w.Status.ClusterName != cluster {
			w.Status.ClusterName, changed = cluster, true
		}
		return changed
	})
	return client.IgnoreNotFound(err)
}

// dispatch makes the job's copies in the workers that can be reached, and
// picks the first whose Berth reserved quota for them.
func (d *Dispatcher) dispatch(ctx context.Context, wl *berthv1alpha1.Workload, st *berthv1alpha1.AdmissionCheckState, k *kind, members []client.Object, clusters []string) (ctrl.Result, error) {
	var reached, unreached []string
	var winner *worker
	var since time.Time
	for _, name := range clusters {
		w := d.workers.get(name)
		switch {
		case w == nil:
			unreached = append(unreached, name+" (not reachable)")
			continue
		case !w.serves(k):
			unreached = append(unreached, fmt.Sprintf("%s (does not serve %s)", name, k.gvk.GroupKind()))
			continue
		}
		at, why, err := d.copyIn(ctx, w, wl, k, members)
		var failed *copyError
		if errors.As(err, &failed) {
			unreached = append(unreached, failed.Error())
			continue
		} else if err != nil {
			return ctrl.Result{}, err
		}
		if why != "" {
			name += " (" + why + ")"
		}
		reached = append(reached, name)
		if !at.IsZero() && (winner == nil || at.Before(since)) {
			winner, since = w, at
		}
	}
	if winner == nil {
		msg := "No worker cluster can be reached"
		if len(reached) > 0 {
			msg = fmt.Sprintf("Copied to worker clusters %s; waiting for the Berth of one of them to admit it", strings.Join(reached, ", "))
		}
		if len(unreached) > 0 {
			msg += "; not to " + strings.Join(unreached, ", ")
		}
		res := ctrl.Result{}
		if len(unreached) > 0 {
			// A worker that comes back wakes the dispatcher; a copy that
			// failed is tried again.
			res.RequeueAfter = copyRetry
		}
		return res, d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStatePending, Message: msg}, "")
	}
	if err := d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStateReady,
		Message: fmt.Sprintf("Admitted in worker cluster %s, where it runs", winner.name)}, winner.name); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, d.deleteCopies(ctx, client.ObjectKeyFromObject(wl), k, func(w *worker, _ client.Object) bool { return w == winner })
}

// copyRetry is how soon a copy that a worker refused is tried again.
const copyRetry = 30 * time.Second

// copyError is a worker's refusal of a copy.
type copyError struct {
	worker string
	err    error
}

func (e *copyError) Error() string {
	return fmt.Sprintf("%s (the copy was refused: %v)", e.worker, e.err)
}

// copyIn makes the copies of the job's members in w that are not there,
// and returns when w's Berth reserved quota for them (zero while it has
// not) or, while they wait, why, as w's Berth says. A copy of an earlier
// attempt is deleted, to be made again.
func (d *Dispatcher) copyIn(ctx context.Context, w *worker, wl *berthv1alpha1.Workload, k *kind, members []client.Object) (time.Time, string, error) {
	var first client.Object
	changed := false
	for _, m := range members {
		c := k.newObject()
		err := w.cache.Get(ctx, client.ObjectKeyFromObject(m), c)
		switch {
		case apierrors.IsNotFound(err):
			if err := w.client.Create(ctx, k.copyFor(m, wl, d.origin)); err != nil && !apierrors.IsAlreadyExists(err) {
				// Its namespace missing there, say: the check's message
				// says so.
				return time.Time{}, "", &copyError{worker: w.name, err: err}
			}
			changed = true
		case err != nil:
			return time.Time{}, "", err
		case stale(c, wl):
			if err := deleteCopy(ctx, w, k, c); err != nil {
				return time.Time{}, "", err
			}
			changed = true
		case first == nil:
			first = c
		}
	}
	if changed {
		// The worker's Berth queues the copies as they are now.
		return time.Time{}, "", nil
	}
	remote := &berthv1alpha1.Workload{}
	if err := w.cache.Get(ctx, types.NamespacedName{Namespace: first.GetNamespace(), Name: k.workloadName(first)}, remote); err != nil {
		return time.Time{}, "", client.IgnoreNotFound(err)
	}
	cond := workload.FindCondition(remote, berthv1alpha1.WorkloadQuotaReserved)
	switch {
	case cond == nil:
		return time.Time{}, "", nil
	case cond.Status == metav1.ConditionTrue:
		return cond.LastTransitionTime.Time, "", nil
	}
	return time.Time{}, truncate(cond.Message, maxWhy), nil
}

// stale reports whether the copy c was made for another Workload than wl,
// or for an earlier attempt of it.
func stale(c client.Object, wl *berthv1alpha1.Workload) bool {
	return c.GetAnnotations()[berthv1alpha1.MultiClusterAttemptAnnotation] != attempt(wl) || managerWorkload(c).Name != wl.Name
}

// maxWhy bounds what the check's message says of each worker's wait.
const maxWhy = 512

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// follow mirrors the status of the copies that run in the worker wl was
// dispatched to onto the job's members, deletes the copies of members
// deleted here, and asks for the workload to be requeued when that worker
// has been lost for longer than the timeout, or a copy is gone.
func (d *Dispatcher) follow(ctx context.Context, wl *berthv1alpha1.Workload, st *berthv1alpha1.AdmissionCheckState, k *kind, members []client.Object) (ctrl.Result, error) {
	name := wl.Status.ClusterName
	w := d.workers.get(name)
	if w == nil {
		lost, err := d.lostFor(ctx, name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if lost < d.lostTimeout {
			return ctrl.Result{RequeueAfter: d.lostTimeout - lost}, nil
		}
		return ctrl.Result{}, d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStateRetry, RequeueAfterSeconds: ptr.To[int32](0),
			Message: fmt.Sprintf("Worker cluster %s, where it ran, has not answered for %s (multiCluster.workerLostTimeout %s): requeued, to run elsewhere",
				name, lost.Truncate(time.Second), d.lostTimeout)}, "")
	}
	here := map[string]bool{}
	for _, m := range members {
		here[m.GetName()] = true
	}
	if err := d.deleteCopies(ctx, client.ObjectKeyFromObject(wl), k, func(cw *worker, c client.Object) bool { return cw == w && here[c.GetName()] }); err != nil {
		return ctrl.Result{}, err
	}
	copies := make([]client.Object, len(members))
	for i, m := range members {
		c := k.newObject()
		err := w.cache.Get(ctx, client.ObjectKeyFromObject(m), c)
		if apierrors.IsNotFound(err) || err == nil && stale(c, wl) {
			return ctrl.Result{}, d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStateRetry, RequeueAfterSeconds: ptr.To[int32](0),
				Message: fmt.Sprintf("Its copy %s in worker cluster %s is gone: requeued, to run again", m.GetName(), name)}, "")
		} else if err != nil {
			return ctrl.Result{}, err
		}
		copies[i] = c
	}
	if why, err := stopped(ctx, w, k, copies[0]); err != nil || why != "" {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, d.setCheck(ctx, wl, berthv1alpha1.AdmissionCheckState{Name: st.Name, State: berthv1alpha1.CheckStateRetry, RequeueAfterSeconds: ptr.To[int32](0),
			Message: fmt.Sprintf("Its copy in worker cluster %s no longer runs: %s; requeued, to run wherever there is room", name, truncate(why, maxWhy))}, "")
	}
	for i, m := range members {
		// A Job is run by the manager once its Workload is admitted (the
		// job's change comes back here), a held pod's Workload is
		// admitted: their status is their copies' from then on.
		if k.mirrored(wl, m) && k.mirror(m, copies[i]) {
			if err := d.client.Status().Update(ctx, m); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, nil
}

// stopped says why the copy c, in w, whose Workload there had quota, has
// lost it (evicted by the worker's Berth, say), "" while it keeps it or
// has finished.
func stopped(ctx context.Context, w *worker, k *kind, c client.Object) (string, error) {
	remote := &berthv1alpha1.Workload{}
	if err := w.cache.Get(ctx, types.NamespacedName{Namespace: c.GetNamespace(), Name: k.workloadName(c)}, remote); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if workload.IsFinished(remote) || workload.HasQuotaReservation(remote) {
		return "", nil
	}
	if ev := workload.FindCondition(remote, berthv1alpha1.WorkloadEvicted); ev != nil && ev.Status == metav1.ConditionTrue {
		return fmt.Sprintf("evicted there (%s): %s", ev.Reason, ev.Message), nil
	}
	return "its Workload there lost its quota", nil
}

// lostFor is how long the worker name has not been reachable: since its
// Active condition became False, or 0 while it is True (its cache not
// synced yet).
func (d *Dispatcher) lostFor(ctx context.Context, name string) (time.Duration, error) {
	wc := &berthv1alpha1.WorkerCluster{}
	if err := d.client.Get(ctx, types.NamespacedName{Name: name}, wc); err != nil {
		if apierrors.IsNotFound(err) {
			return d.lostTimeout, nil
		}
		return 0, err
	}
	c := meta.FindStatusCondition(wc.Status.Conditions, berthv1alpha1.ConditionActive)
	if c == nil || c.Status == metav1.ConditionTrue {
		return 0, nil
	}
	return time.Since(c.LastTransitionTime.Time), nil
}

// deleteCopies deletes the copies of the manager Workload key in the
// connected workers, of kind k or of every kind when nil, but those that
// spare, when not nil, keeps.
func (d *Dispatcher) deleteCopies(ctx context.Context, key types.NamespacedName, k *kind, spare func(*worker, client.Object) bool) error {
	for _, w := range d.workers.connected() {
		for _, wk := range w.kinds {
			if k != nil && wk != k {
				continue
			}
			list := wk.newList()
			if err := w.cache.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
				return err
			}
			if err := meta.EachListItem(list, func(o runtime.Object) error {
				c := o.(client.Object)
				if managerWorkload(c) != key || spare != nil && spare(w, c) {
					return nil
				}
				return deleteCopy(ctx, w, wk, c)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteCopy deletes a copy in w, of kind k, and the pods of one that
// the worker's Berth started.
func deleteCopy(ctx context.Context, w *worker, k *kind, c client.Object) error {
	if !c.GetDeletionTimestamp().IsZero() {
		return nil
	}
	ctrl.LoggerFrom(ctx).V(2).Info("Deleting a copy", "worker", w.name, "copy", c.GetNamespace()+"/"+c.GetName())
	err := w.client.Delete(ctx, c, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: ptr.To(c.GetUID())})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	} else if err != nil {
		return err
	}
	if err := deleteOwnWorkload(ctx, w, k, c); err != nil {
		return err
	}
	if k.podLabel == "" || !k.started(c) {
		// A copy held there made no pods.
		return nil
	}
	// A worker that comes back after it was lost may have no garbage
	// collector for a while: its copy's pods must not run on beside those
	// of the copy that replaced it.
	pods := &corev1.PodList{}
	if err := w.client.List(ctx, pods, client.InNamespace(c.GetNamespace()), client.MatchingLabels{k.podLabel: string(c.GetUID())}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if err := w.client.Delete(ctx, p, client.Preconditions{UID: ptr.To(p.UID)}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// deleteOwnWorkload deletes the Workload that the worker's Berth made for
// the copy c alone (not a pod group's, which the group's other copies
// share). The worker's garbage collector would delete it after c, but
// until then it may hold quota there: both workers' Berth may have
// admitted the copies before the manager chose one, and a worker that
// comes back after it was lost may have no collector for a while. Deleted,
// the worker's Berth frees its quota once its pods are gone.
func deleteOwnWorkload(ctx context.Context, w *worker, k *kind, c client.Object) error {
	remote := &berthv1alpha1.Workload{}
	if err := w.cache.Get(ctx, types.NamespacedName{Namespace: c.GetNamespace(), Name: k.workloadName(c)}, remote); err != nil {
		return client.IgnoreNotFound(err)
	}
	if owners := remote.OwnerReferences; len(owners) != 1 || owners[0].UID != c.GetUID() || !remote.DeletionTimestamp.IsZero() {
		return nil
	}
	err := w.client.Delete(ctx, remote, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: ptr.To(remote.UID)})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// wakeAll wakes the dispatcher for every manager Workload with a check of
// berth.dev/multicluster, or dispatched: a worker came or went.
func (d *Dispatcher) wakeAll(ctx context.Context) {
	checks := &berthv1alpha1.AdmissionCheckList{}
	if err := d.client.List(ctx, checks); err != nil {
		return
	}
	ours := map[berthv1alpha1.AdmissionCheckReference]bool{}
	for _, ac := range checks.Items {
		if ac.Spec.ControllerName == berthv1alpha1.MultiClusterControllerName {
			ours[berthv1alpha1.AdmissionCheckReference(ac.Name)] = true
		}
	}
	wls := &berthv1alpha1.WorkloadList{}
	if err := d.client.List(ctx, wls, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range wls.Items {
		wl := &wls.Items[i]
		if wl.Status.ClusterName == "" && !slices.ContainsFunc(wl.Status.AdmissionChecks, func(st berthv1alpha1.AdmissionCheckState) bool { return ours[st.Name] }) {
			continue
		}
		d.workers.events <- event.GenericEvent{Object: &berthv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: wl.Namespace, Name: wl.Name}}}
	}
}
