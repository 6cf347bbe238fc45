package audit

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// PodSelectors select the pods an audit reads, none twice: managed, the
// pods Berth holds or runs (berth.dev/managed, which the controller's
// cache holds anyway), and queued, those that name a LocalQueue without
// it, having escaped Berth's webhook.
func PodSelectors() (managed, queued labels.Selector) {
	req := func(key string, op selection.Operator) labels.Requirement {
		r, err := labels.NewRequirement(key, op, nil)
		if err != nil {
			// The keys are constants, valid label keys.
			panic(err)
		}
		return *r
	}
	managed = labels.NewSelector().Add(req(berthv1alpha1.ManagedLabel, selection.Exists))
	queued = labels.NewSelector().Add(req(berthv1alpha1.QueueNameLabel, selection.Exists), req(berthv1alpha1.ManagedLabel, selection.DoesNotExist))
	return managed, queued
}
