package jobframework

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// defaulter makes a new job that Berth manages start suspended, and hands
// its pods to its ClusterQueue's scheduler. The scheduler is set here, at
// creation, because a Job's template schedulerName cannot change later,
// not even while it is suspended.
type defaulter struct {
	client      client.Reader
	integration *Integration
	opts        Options
}

// The untyped CustomDefaulter is deprecated, but the typed Defaulter builds
// the object to decode from its type parameter, which here is the
// client.Object interface of any registered framework.
var _ admission.CustomDefaulter = (*defaulter)(nil) //nolint:staticcheck // see above

// Default holds a new job for admission. A part of a job whose parts
// carry its admission is not held itself: it gets that job's admission as
// it is created or changed to run.
func (d *defaulter) Default(ctx context.Context, obj runtime.Object) error {
	cobj, ok := obj.(client.Object)
	if !ok {
		return fmt.Errorf("unexpected object %T", obj)
	}
	if k, part, isPart, err := d.opts.partDecision(ctx, d.client, d.integration, cobj); err != nil || isPart {
		if err != nil {
			return err
		}
		if err := d.setSchedulerName(ctx, part, QueueName(k.owner)); err != nil {
			return err
		}
		return k.carryAdmission(ctx, d.client, part)
	}
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation != admissionv1.Create {
		// Only new jobs are held; suspending a running one is eviction's job.
		return nil
	}
	queue := QueueName(cobj)
	if queue == "" {
		var held bool
		var err error
		if queue, held, err = d.opts.unlabelledQueue(ctx, d.client, cobj); err != nil || !held {
			return err
		}
	}
	if selected, err := d.integration.selects(ctx, d.client, cobj, d.opts); err != nil || !selected {
		return err
	}
	job, err := d.integration.Wrap(cobj)
	if err != nil {
		return err
	}
	job.Suspend()
	gateElastic(job)
	if c, ok := job.(JobWithCreateDefaults); ok {
		c.DefaultOnCreate()
	}
	cq, err := d.clusterQueueOf(ctx, cobj.GetNamespace(), queue)
	if err != nil {
		return err
	}
	if err := d.setManagedBy(ctx, job, queue, cq); err != nil {
		return err
	}
	return d.setSchedulerName(ctx, job, queue)
}

// setManagedBy hands a job of a ClusterQueue that dispatches to worker
// clusters to Berth's dispatch, unless its owner named a controller: the
// manager's own controller of the kind must not run it too. It can be set
// only now: spec.managedBy cannot change. A job that names Berth's
// dispatch in a queue that does not dispatch is refused: admitted here,
// nothing would run it.
func (d *defaulter) setManagedBy(ctx context.Context, job GenericJob, queue string, cq *berthv1alpha1.ClusterQueue) error {
	m, ok := job.(JobWithManagedBy)
	if !ok {
		return nil
	}
	by := m.ManagedBy()
	if by != nil && *by != berthv1alpha1.MultiClusterControllerName {
		return nil
	}
	dispatches, err := d.dispatches(ctx, cq)
	if err != nil {
		return err
	}
	switch {
	case by == nil && dispatches:
		m.SetManagedBy(berthv1alpha1.MultiClusterControllerName)
	case by != nil && !dispatches:
		obj := job.Object()
		return apierrors.NewInvalid(d.integration.GVK.GroupKind(), obj.GetName(), field.ErrorList{field.Invalid(field.NewPath("spec", "managedBy"), *by,
			fmt.Sprintf("only a job whose LocalQueue (%s) belongs to a ClusterQueue with an admission check of %s is dispatched to worker clusters; this one would wait here with nothing to run it",
				queue, berthv1alpha1.MultiClusterControllerName))})
	}
	return nil
}

// dispatches reports whether cq has an admission check of
// berth.dev/multicluster; false when cq is nil.
func (d *defaulter) dispatches(ctx context.Context, cq *berthv1alpha1.ClusterQueue) (bool, error) {
	if cq == nil {
		return false, nil
	}
	for _, name := range workload.ChecksNamed(cq) {
		ac := &berthv1alpha1.AdmissionCheck{}
		if err := d.client.Get(ctx, types.NamespacedName{Name: string(name)}, ac); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false, err
		}
		if ac.Spec.ControllerName == berthv1alpha1.MultiClusterControllerName {
			return true, nil
		}
	}
	return false, nil
}

// setSchedulerName hands the pods of job, of a job in queue, to its
// ClusterQueue's scheduler, where their templates name none.
func (d *defaulter) setSchedulerName(ctx context.Context, job GenericJob, queue string) error {
	withSpecs, ok := job.(JobWithPodSpecs)
	if !ok {
		return nil
	}
	name, err := d.schedulerName(ctx, job.Object().GetNamespace(), queue)
	if err != nil || name == "" {
		return err
	}
	for _, spec := range withSpecs.PodSpecs() {
		// The API server has defaulted an empty name to default-scheduler
		// before webhooks run, so that one counts as unset too.
		if spec.SchedulerName == "" || spec.SchedulerName == corev1.DefaultSchedulerName {
			spec.SchedulerName = name
		}
	}
	return nil
}

// schedulerName is the scheduler of the queue's ClusterQueue, or the
// configured default. A queue that does not exist yet gets the default.
func (d *defaulter) schedulerName(ctx context.Context, ns, queue string) (string, error) {
	if queue == "" {
		return d.opts.DefaultSchedulerName, nil
	}
	cq, err := d.clusterQueueOf(ctx, ns, queue)
	if err != nil {
		return "", err
	}
	if cq != nil && cq.Spec.SchedulerName != "" {
		return cq.Spec.SchedulerName, nil
	}
	return d.opts.DefaultSchedulerName, nil
}

// clusterQueueOf is the ClusterQueue of the LocalQueue ns/queue, nil when
// either does not exist (yet).
func (d *defaulter) clusterQueueOf(ctx context.Context, ns, queue string) (*berthv1alpha1.ClusterQueue, error) {
	if queue == "" {
		return nil, nil
	}
	lq := &berthv1alpha1.LocalQueue{}
	if err := d.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: queue}, lq); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	cq := &berthv1alpha1.ClusterQueue{}
	if err := d.client.Get(ctx, types.NamespacedName{Name: string(lq.Spec.ClusterQueue)}, cq); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return cq, nil
}
