package jobframework

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// JobWithCreateChecks is implemented by jobs that Berth cannot hold in
// some shapes, to refuse those at creation with the field named.
type JobWithCreateChecks interface {
	// ValidateOnCreate says what keeps Berth from holding the new job.
	ValidateOnCreate() field.ErrorList
}

// JobWithUpdateChecks is implemented by jobs with fields of their own
// that must not change, to refuse such an update with the field named.
type JobWithUpdateChecks interface {
	// ValidateOnUpdate says what in the change from old Berth refuses.
	ValidateOnUpdate(old GenericJob) field.ErrorList
}

// JobRunningOnWorkload is implemented by objects that another controller
// makes for a job Berth runs, such as the pods of a Job: they name the
// Workload whose admission they run on, and are refused while it is not
// admitted. A Job's controller that has not yet seen the Job stopped may
// still make a pod from the spec it last saw; counted nowhere, such a pod
// could start beside the workload admitted in its place.
type JobRunningOnWorkload interface {
	// RunsOnWorkload names the Workload the new object runs on, or ""
	// when it is not made for a job Berth runs.
	RunsOnWorkload() string
}

// JobWithCreateDefaults is implemented by jobs that the webhook changes
// further as they are created and held: a TrainJob hands its queue label
// down to the JobSet Trainer makes of it.
type JobWithCreateDefaults interface {
	// DefaultOnCreate changes the new, held job.
	DefaultOnCreate()
}

// JobWithHoldPath is implemented by jobs held by another field than
// spec.suspend, so that a refused start names it.
type JobWithHoldPath interface {
	// HoldPath is the field that holds the job.
	HoldPath() *field.Path
}

// JobWithPodSetPaths is implemented by jobs that can say where each podset
// is written, so that a refusal names the field a person changed.
type JobWithPodSetPaths interface {
	// PodSetPaths are the fields of a podset: its pod count and its pod
	// template.
	PodSetPaths(podSet string) (count, template *field.Path)
}

// validator refuses what would let a job escape its quota, and input that
// cannot become a Workload, naming the field:
//   - a job whose pod sets Berth cannot count;
//   - while the job's Workload holds quota: a change or removal of its
//     queue label, and a change of its pod sets (counts, requests, node
//     selector, tolerations);
//   - a suspend: false on a job whose Workload is not admitted.
//
// Berth's own writes (running the admitted job, stopping it, restoring its
// templates) are not checked: the controller is the one that keeps these
// rules. A change of a waiting job's pod sets is allowed: its Workload is
// replaced (see JobReconciler).
type validator struct {
	client      client.Reader
	integration *Integration
	opts        Options
}

var _ admission.CustomValidator = (*validator)(nil) //nolint:staticcheck // see defaulter

// ValidateCreate refuses a new job that cannot become a Workload.
func (v *validator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	job, err := v.wrap(obj)
	if err != nil {
		return nil, err
	}
	if isPart, err := v.partRefused(ctx, nil, job); err != nil || isPart {
		return nil, err
	}
	if r, ok := job.(JobRunningOnWorkload); ok && r.RunsOnWorkload() != "" {
		return nil, v.runsAdmitted(ctx, job, r.RunsOnWorkload())
	}
	if managed, err := v.managed(ctx, job); err != nil || !managed {
		return nil, err
	}
	if selected, err := v.integration.selects(ctx, v.client, job.Object(), v.opts); err != nil || !selected {
		return nil, err
	}
	podSets, errs, err := podSetsOf(ctx, v.client, job)
	if err != nil {
		return nil, err
	}
	errs = append(errs, elasticErrors(nil, job, nil, podSetNames(podSets))...)
	if c, ok := job.(JobWithCreateChecks); ok {
		errs = append(errs, c.ValidateOnCreate()...)
	}
	if _, ferr := MaxExecTimeSeconds(job.Object()); ferr != nil {
		errs = append(errs, ferr)
	}
	return nil, v.invalid(job, errs)
}

// ValidateUpdate refuses a change that the job's Workload cannot follow.
func (v *validator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	if req, err := admission.RequestFromContext(ctx); err == nil && v.fromController(req) {
		return nil, nil
	}
	oldJob, err := v.wrap(oldObj)
	if err != nil {
		return nil, err
	}
	newJob, err := v.wrap(newObj)
	if err != nil {
		return nil, err
	}
	if isPart, err := v.partRefused(ctx, oldJob, newJob); err != nil || isPart {
		return nil, err
	}
	// An integration's own checks run whatever the queue label says: the
	// pods of an admitted Job carry Berth's labels, not always the queue's.
	var errs field.ErrorList
	if c, ok := newJob.(JobWithUpdateChecks); ok {
		errs = c.ValidateOnUpdate(oldJob)
	}
	if len(errs) > 0 {
		return nil, v.invalid(newJob, errs)
	}
	if managed, err := v.managedEither(ctx, oldJob, newJob); err != nil || !managed {
		return nil, err
	}
	wl, err := v.workloadOf(ctx, newJob)
	if err != nil {
		return nil, err
	}
	if v.integration.HoldOnlyAtCreation && wl == nil && !oldJob.IsSuspended() {
		// Not held when it was created: not Berth's to check.
		return nil, nil
	}
	var newPodSets []berthv1alpha1.PodSet
	newPodSets, errs, err = podSetsOf(ctx, v.client, newJob)
	if err != nil {
		return nil, err
	}
	errs = append(errs, queueLabelChange(oldJob, newJob, wl)...)
	if wl == nil || !workload.IsFinished(wl) {
		ferr, err := v.opts.QueueLabelRemoval(ctx, v.client, oldJob.Object(), newJob.Object())
		if err != nil {
			return nil, err
		}
		if ferr != nil {
			errs = append(errs, ferr)
		}
	}
	if _, ferr := MaxExecTimeSeconds(newJob.Object()); ferr != nil {
		errs = append(errs, ferr)
	}
	errs = append(errs, unadmittedStart(oldJob, newJob, wl)...)
	oldPodSets, oldErrs, err := podSetsOf(ctx, v.client, oldJob)
	if err != nil {
		return nil, err
	}
	errs = append(errs, elasticErrors(oldJob, newJob, wl, podSetNames(newPodSets))...)
	if len(oldErrs) == 0 && newPodSets != nil {
		_, elastic := AsElastic(oldJob)
		if _, ok := AsElastic(newJob); !ok {
			elastic = false
		}
		errs = append(errs, podSetsChange(newJob, oldPodSets, newPodSets, wl, elastic)...)
	}
	return nil, v.invalid(newJob, errs)
}

// partRefused reports whether job is a part of a job whose parts carry
// its admission, and refuses it, as an error, if it would run outside that
// admission, or if it (oldJob before, nil at creation) had the queue
// label and would have another than its job's.
func (v *validator) partRefused(ctx context.Context, oldJob, job GenericJob) (bool, error) {
	k, err := v.opts.carrierOf(ctx, v.client, job.Object())
	if err != nil || k.owner == nil {
		return false, err
	}
	errs, err := k.refusal(ctx, v.client, oldJob, job)
	if err != nil {
		return true, err
	}
	if oldJob != nil && QueueName(oldJob.Object()) != "" && QueueName(job.Object()) != QueueName(k.owner) {
		// Without it, the part's later changes would not reach the webhooks.
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels").Key(berthv1alpha1.QueueNameLabel), fmt.Sprintf(
			"is handed down from %s %s, whose queue is %q: change the %s's", k.integration.GVK.Kind, k.owner.GetName(), QueueName(k.owner), k.integration.GVK.Kind)))
	}
	return true, v.invalid(job, errs)
}

// ValidateDelete allows every deletion: the Workload goes with the job.
func (v *validator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (v *validator) wrap(obj runtime.Object) (GenericJob, error) {
	cobj, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return v.integration.Wrap(cobj)
}

// managed reports whether Berth holds job.
func (v *validator) managed(ctx context.Context, job GenericJob) (bool, error) {
	return v.opts.Holds(ctx, v.client, job.Object())
}

// managedEither reports whether Berth holds the job before or after a
// change: removing the label does not free it.
func (v *validator) managedEither(ctx context.Context, oldJob, newJob GenericJob) (bool, error) {
	if managed, err := v.managed(ctx, oldJob); err != nil || managed {
		return managed, err
	}
	return v.managed(ctx, newJob)
}

// fromController reports whether Berth's controller itself sent req.
func (v *validator) fromController(req admission.Request) bool {
	return v.opts.ControllerUsername != "" && req.UserInfo.Username == v.opts.ControllerUsername &&
		req.Operation == admissionv1.Update
}

func (v *validator) workloadOf(ctx context.Context, job GenericJob) (*berthv1alpha1.Workload, error) {
	obj := job.Object()
	wl := &berthv1alpha1.Workload{}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: WorkloadName(v.integration.GVK, obj.GetName(), string(obj.GetUID()))}
	if err := v.client.Get(ctx, key, wl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return wl, nil
}

// runsAdmitted refuses an object made for a job whose Workload is not
// admitted, or is evicted: the job is being stopped, and its quota will
// be given to another once its pods are gone. A refusal is confirmed with
// the API server: another replica's cache may not have the admission yet.
func (v *validator) runsAdmitted(ctx context.Context, job GenericJob, name string) error {
	key := types.NamespacedName{Namespace: job.Object().GetNamespace(), Name: name}
	why, err := notRunning(func(wl *berthv1alpha1.Workload) error { return v.client.Get(ctx, key, wl) })
	if err != nil || why == "" {
		return err
	}
	why, err = notRunning(func(wl *berthv1alpha1.Workload) error { return GetLive(ctx, v.client, key, wl) })
	if err != nil || why == "" {
		return err
	}
	path := field.NewPath("metadata", "labels").Key(berthv1alpha1.WorkloadLabel)
	return v.invalid(job, field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"workload %s %s; the job's pods are made only while it is admitted", name, why))})
}

// notRunning says why the Workload that get reads may not run, or "" when
// it may: it is admitted and not evicted.
func notRunning(get func(*berthv1alpha1.Workload) error) (string, error) {
	wl := &berthv1alpha1.Workload{}
	err := get(wl)
	if client.IgnoreNotFound(err) != nil {
		return "", err
	}
	switch ev := workload.FindCondition(wl, berthv1alpha1.WorkloadEvicted); {
	case err != nil:
		return "does not exist", nil
	case ev != nil && ev.Status == metav1.ConditionTrue:
		return fmt.Sprintf("is evicted (%s): its job is being stopped", ev.Reason), nil
	case !workload.IsAdmitted(wl) || wl.Status.Admission == nil:
		return "is not admitted", nil
	}
	return "", nil
}

func (v *validator) invalid(job GenericJob, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v.integration.GVK.GroupKind(), job.Object().GetName(), errs)
}

// podSetsOf is the job's pod sets with what the API server adds to their
// pods (applyPodDefaults), or why Berth cannot count them: the
// integration's own reasons, a podset without pods, and totals of a podset
// that do not fit in Berth's 64-bit quota arithmetic. An error is one of
// reading what the API server would add.
func podSetsOf(ctx context.Context, c client.Reader, job GenericJob) ([]berthv1alpha1.PodSet, field.ErrorList, error) {
	if r, ok := job.(JobWithReferences); ok {
		if err := r.Resolve(ctx, c); err != nil {
			if errs := fieldErrors(err); len(errs) > 0 {
				return nil, errs, nil
			}
			return nil, nil, err
		}
	}
	podSets, err := job.PodSets()
	if err != nil {
		if errs := fieldErrors(err); len(errs) > 0 {
			return nil, errs, nil
		}
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), "", err.Error())}, nil
	}
	errs, err := applyPodDefaults(ctx, c, job, podSets)
	if err != nil || len(errs) > 0 {
		return nil, errs, err
	}
	for i := range podSets {
		ps := &podSets[i]
		count, tmpl := podSetPaths(job, ps.Name)
		if ps.Count < 1 {
			errs = append(errs, field.Invalid(count, ps.Count, fmt.Sprintf(
				"podset %s has no pods: a job in a Berth queue runs at least one; to hold it, stop its workload with kubectl berth stop", ps.Name)))
			continue
		}
		if _, err := workload.PodSetTopologyRequest(ps); err != nil {
			errs = append(errs, field.Invalid(tmpl.Child("metadata", "annotations"), ps.Template.Annotations, err.Error()))
		}
		perPod := workload.PodRequests(&ps.Template.Spec)
		for _, name := range perPod.Names() {
			if total := resources.Mul(perPod[name], int64(ps.Count)); total == resources.Max {
				// A nil template is the job itself, a pod.
				errs = append(errs, field.Invalid(tmpl.Child("spec").Child("containers").Key("resources.requests").Key(string(name)),
					resources.Format(name, perPod[name]),
					fmt.Sprintf("%d pods of podset %s would request more %s than Berth can count", ps.Count, ps.Name, name)))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	return podSets, nil, nil
}

// fieldErrors finds the field errors in err, an integration's.
func fieldErrors(err error) field.ErrorList {
	var list field.ErrorList
	switch e := err.(type) {
	case *field.Error:
		list = append(list, e)
	case interface{ Errors() []error }:
		for _, inner := range e.Errors() {
			list = append(list, fieldErrors(inner)...)
		}
	}
	return list
}

func podSetPaths(job GenericJob, podSet string) (count, template *field.Path) {
	if p, ok := job.(JobWithPodSetPaths); ok {
		return p.PodSetPaths(podSet)
	}
	return field.NewPath("spec"), field.NewPath("spec")
}

// queueLabelChange refuses moving or removing a job that holds quota: its
// Workload would finish in no queue's books, or in the wrong one.
func queueLabelChange(oldJob, newJob GenericJob, wl *berthv1alpha1.Workload) field.ErrorList {
	oldQ, newQ := QueueName(oldJob.Object()), QueueName(newJob.Object())
	if oldQ == newQ || wl == nil || !workload.HasQuotaReservation(wl) {
		return nil
	}
	path := field.NewPath("metadata", "labels").Key(berthv1alpha1.QueueNameLabel)
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"cannot change while the job holds quota in ClusterQueue %s (Workload %s); stop the workload first (kubectl berth stop workload %s) and change it once it waits",
		wl.Status.Admission.ClusterQueue, wl.Name, wl.Name))}
}

// unadmittedStart refuses a user's start of a job Berth has not admitted.
func unadmittedStart(oldJob, newJob GenericJob, wl *berthv1alpha1.Workload) field.ErrorList {
	if !oldJob.IsSuspended() || newJob.IsSuspended() {
		return nil
	}
	if wl != nil && workload.IsAdmitted(wl) && !workload.IsEvicted(wl) && workload.IsActive(wl) {
		return nil
	}
	why := "it has no Workload yet"
	if wl != nil {
		why = fmt.Sprintf("its Workload %s is not admitted", wl.Name)
		if c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved); c != nil && c.Message != "" {
			why += ": " + c.Message
		}
	}
	path := field.NewPath("spec", "suspend")
	if h, ok := newJob.(JobWithHoldPath); ok {
		path = h.HoldPath()
	}
	return field.ErrorList{field.Forbidden(path, "a job in a Berth queue runs only once admitted, and Berth starts it then; "+why)}
}

// podSetNames are the names of podSets.
func podSetNames(podSets []berthv1alpha1.PodSet) []string {
	names := make([]string, len(podSets))
	for i := range podSets {
		names[i] = podSets[i].Name
	}
	return names
}

// podSetsChange refuses a change of the pod sets of a job that holds quota
// or runs: the pods would ask for what was not admitted. An elastic job's
// counts may change: the pods it adds wait for a slice of quota.
func podSetsChange(job GenericJob, oldPodSets, newPodSets []berthv1alpha1.PodSet, wl *berthv1alpha1.Workload, elastic bool) field.ErrorList {
	holds := wl != nil && workload.HasQuotaReservation(wl)
	if !holds && job.IsSuspended() {
		return nil
	}
	if len(oldPodSets) != len(newPodSets) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "cannot change the number of pod sets while the job holds quota")}
	}
	why := "while the job runs"
	if holds {
		why = fmt.Sprintf("while the job holds quota in ClusterQueue %s (Workload %s)", wl.Status.Admission.ClusterQueue, wl.Name)
	}
	var errs field.ErrorList
	for i := range newPodSets {
		o, n := oldPodSets[i], newPodSets[i]
		countPath, templatePath := podSetPaths(job, n.Name)
		if templatePath == nil {
			// The job is its only pod.
			templatePath = field.NewPath("spec")
		}
		if o.Count != n.Count && !elastic {
			hint := ""
			if _, can := job.(ElasticJob); can {
				hint = fmt.Sprintf(", or create the job elastic (%s: \"true\")", berthv1alpha1.ElasticAnnotation)
			}
			errs = append(errs, field.Forbidden(countPath, fmt.Sprintf(
				"cannot change from %d to %d pods %s; stop the workload (kubectl berth stop), change the job while it waits, and resume it (kubectl berth resume)%s", o.Count, n.Count, why, hint)))
		}
		n.Count = o.Count
		if diff := workload.PodSetsDiffer([]berthv1alpha1.PodSet{o}, []berthv1alpha1.PodSet{n}); diff != "" {
			errs = append(errs, field.Forbidden(templatePath, fmt.Sprintf("cannot change %s (%s)", why, diff)))
		}
	}
	return errs
}
