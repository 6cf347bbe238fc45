package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// Field indexes on the informer caches, so that reconcilers list what they
// need without scanning every object.
const (
	// WorkloadClusterQueueKey indexes Workloads by the ClusterQueue that
	// holds quota for them.
	WorkloadClusterQueueKey = "status.admission.clusterQueue"
	// WorkloadPriorityClassKey indexes Workloads by spec.priorityClassName.
	WorkloadPriorityClassKey = "spec.priorityClassName"
	// LocalQueueClusterQueueKey indexes LocalQueues by spec.clusterQueue.
	LocalQueueClusterQueueKey = "spec.clusterQueue"
	// PodNodeKey indexes the pods Berth runs by spec.nodeName.
	PodNodeKey = "spec.nodeName"
)

// SetupIndexes registers the field indexes.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&berthv1alpha1.Workload{}, WorkloadClusterQueueKey, func(o client.Object) []string {
			if adm := o.(*berthv1alpha1.Workload).Status.Admission; adm != nil {
				return nonEmpty(string(adm.ClusterQueue))
			}
			return nil
		}},
		{&berthv1alpha1.Workload{}, WorkloadPriorityClassKey, func(o client.Object) []string {
			return nonEmpty(o.(*berthv1alpha1.Workload).Spec.PriorityClassName)
		}},
		{&berthv1alpha1.LocalQueue{}, LocalQueueClusterQueueKey, func(o client.Object) []string {
			return nonEmpty(string(o.(*berthv1alpha1.LocalQueue).Spec.ClusterQueue))
		}},
		{&corev1.Pod{}, PodNodeKey, func(o client.Object) []string {
			return nonEmpty(o.(*corev1.Pod).Spec.NodeName)
		}},
		{&corev1.Pod{}, jobframework.PodWorkloadKey, func(o client.Object) []string {
			return nonEmpty(o.GetLabels()[berthv1alpha1.WorkloadLabel])
		}},
	}
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.obj, ix.field, ix.extract); err != nil {
			return err
		}
	}
	return nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// localQueueIndex indexes the Workloads that have not finished by
// "namespace/spec.queueName", on the Workload informer itself.
const localQueueIndex = "berth.dev/local-queue"

// workloadsOfQueue calls f with each Workload of the LocalQueue
// namespace/name, read-only: QueueWorkloads.Each.
type workloadsOfQueue func(namespace, name string, f func(*berthv1alpha1.Workload)) error

// QueueWorkloads finds the unfinished Workloads that name a LocalQueue in
// the Workload informer's own index. Finished Workloads stay until their
// jobs are deleted, often for days, and neither of its readers wants them
// (a queue's counts, and requeueing a queue's workloads): they leave the
// index when they finish, so that a queue's recount costs what it holds
// now, not every workload it ever ran. A cached List copies each Workload into the list
// it returns; counting a busy queue's workloads that way every second was
// a tenth of the controller's allocations in the perf baseline. These are
// the informer's objects: read them, never change them.
type QueueWorkloads struct {
	indexer toolscache.Indexer
}

// indexedInformer is what QueueWorkloads needs of client-go's
// SharedIndexInformer, the informers of controller-runtime's cache.
type indexedInformer interface {
	AddIndexers(toolscache.Indexers) error
	GetIndexer() toolscache.Indexer
}

// NewQueueWorkloads adds the index to the Workload informer of informers.
// Call it before the informer starts.
func NewQueueWorkloads(ctx context.Context, informers ctrlcache.Informers) (*QueueWorkloads, error) {
	inf, err := informers.GetInformer(ctx, &berthv1alpha1.Workload{})
	if err != nil {
		return nil, err
	}
	indexed, ok := inf.(indexedInformer)
	if !ok {
		return nil, fmt.Errorf("the Workload informer (%T) has no indexer", inf)
	}
	return newQueueWorkloads(indexed)
}

func newQueueWorkloads(inf indexedInformer) (*QueueWorkloads, error) {
	err := inf.AddIndexers(toolscache.Indexers{localQueueIndex: func(obj any) ([]string, error) {
		wl, ok := obj.(*berthv1alpha1.Workload)
		if !ok || wl.Spec.QueueName == "" || workload.IsFinished(wl) {
			return nil, nil
		}
		return []string{wl.Namespace + "/" + string(wl.Spec.QueueName)}, nil
	}})
	if err != nil {
		return nil, err
	}
	return &QueueWorkloads{indexer: inf.GetIndexer()}, nil
}

// Get returns the informer's own Workload of key, not a copy, or a
// NotFound error. The Workload reconciler keeps what it reads in the
// engine's queues and cache until the next event: the informer's object
// itself, where a copy of it (even a shallow one, 448 bytes) for every
// Workload known was 6% of the controller's heap at 50,000 Workloads.
func (q *QueueWorkloads) Get(key types.NamespacedName) (*berthv1alpha1.Workload, error) {
	obj, ok, err := q.indexer.GetByKey(key.String())
	if err != nil {
		return nil, err
	}
	wl, isWl := obj.(*berthv1alpha1.Workload)
	if !ok || !isWl {
		return nil, apierrors.NewNotFound(berthv1alpha1.GroupVersion.WithResource("workloads").GroupResource(), key.Name)
	}
	return wl, nil
}

// Each calls f with every unfinished Workload that names the LocalQueue
// namespace/name.
func (q *QueueWorkloads) Each(namespace, name string, f func(*berthv1alpha1.Workload)) error {
	objs, err := q.indexer.ByIndex(localQueueIndex, namespace+"/"+name)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if wl, ok := obj.(*berthv1alpha1.Workload); ok {
			f(wl)
		}
	}
	return nil
}
