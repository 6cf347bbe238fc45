package core

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// Field indexes on the informer caches, so that reconcilers list what they
// need without scanning every object.
const (
	// WorkloadQueueKey indexes Workloads by spec.queueName.
	WorkloadQueueKey = "spec.queueName"
	// WorkloadClusterQueueKey indexes Workloads by the ClusterQueue that
	// holds quota for them.
	WorkloadClusterQueueKey = "status.admission.clusterQueue"
	// WorkloadPriorityClassKey indexes Workloads by spec.priorityClassName.
	WorkloadPriorityClassKey = "spec.priorityClassName"
	// LocalQueueClusterQueueKey indexes LocalQueues by spec.clusterQueue.
	LocalQueueClusterQueueKey = "spec.clusterQueue"
)

// SetupIndexes registers the field indexes.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&berthv1alpha1.Workload{}, WorkloadQueueKey, func(o client.Object) []string {
			return nonEmpty(string(o.(*berthv1alpha1.Workload).Spec.QueueName))
		}},
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
