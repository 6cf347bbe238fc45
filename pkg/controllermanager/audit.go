package controllermanager

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/auditor"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// setupAudit runs the quota audit on the leader, reading the pods of mgr's
// cache and of a second one (QueuedPodsCache). A queued pod is Berth's to
// count only where the pod integration holds queued pods: in the
// namespaces that podNamespaces selects (nil for all), and nowhere when
// the integration is off.
func setupAudit(ctx context.Context, mgr ctrl.Manager, enabled []*jobframework.Integration, podNamespaces labels.Selector, recorder events.EventRecorder) error {
	queued, err := QueuedPodsCache(mgr)
	if err != nil {
		return err
	}
	if err := mgr.Add(queued); err != nil {
		return err
	}
	if !slices.ContainsFunc(enabled, func(i *jobframework.Integration) bool { return i.Name == configv1alpha1.FrameworkPod }) {
		podNamespaces = labels.Nothing()
	}
	return auditor.Setup(ctx, mgr, auditor.Options{Queued: queued, Namespaces: podNamespaces, Recorder: recorder})
}
