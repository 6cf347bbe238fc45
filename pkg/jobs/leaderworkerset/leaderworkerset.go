package leaderworkerset

import (
	"context"
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/jobframework"
	"github.com/berth-dev/berth/pkg/jobs/pod"
)

// +kubebuilder:webhook:path=/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset,mutating=true,failurePolicy=fail,sideEffects=None,groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=create;update,versions=v1,name=mleaderworkerset.berth.dev,admissionReviewVersions=v1

// GVK is the kind of a LeaderWorkerSet.
var GVK = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}

const path = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"

func init() {
	pod.RegisterGroupJoiner(joinGroup)
	jobframework.Register(&jobframework.Integration{
		Name: configv1alpha1.FrameworkLeaderWorkerSet,
		GVK:  GVK,
		// Its leader and worker StatefulSets; their pods are pod groups.
		Parts: []schema.GroupKind{{Group: "apps", Kind: "StatefulSet"}},
		// The LeaderWorkerSet controller labels them with its name.
		OwnsPart: func(owner, sts client.Object) bool { return sts.GetLabels()[nameLabel] == owner.GetName() },
		Setup: func(mgr ctrl.Manager, opts jobframework.Options) error {
			mgr.GetWebhookServer().Register(path, &webhook.Admission{Handler: labeler{client: jobframework.WebhookReader(mgr), opts: opts}})
			return nil
		},
	})
}

// labeler hands a LeaderWorkerSet's queue and priority labels down to its
// worker template, and to its leader template when it has one (without,
// the leader is made from the worker template). A new LeaderWorkerSet
// without a queue gets its namespace's default LocalQueue.
type labeler struct {
	client client.Reader
	opts   jobframework.Options
}

// Handle patches the templates' labels.
func (l labeler) Handle(ctx context.Context, req admission.Request) admission.Response {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if err := l.opts.DefaultQueueOnAdmission(ctx, l.client, req, obj); err != nil {
		if apierrors.IsInvalid(err) {
			return admission.Denied(err.Error())
		}
		return admission.Errored(http.StatusInternalServerError, err)
	}
	labels := obj.GetLabels()
	if policy, _, _ := unstructured.NestedString(obj.Object, "spec", "startupPolicy"); policy == "LeaderReady" && labels[berthv1alpha1.QueueNameLabel] != "" {
		return admission.Denied(field.Forbidden(field.NewPath("spec", "startupPolicy"),
			"Berth admits a group once all its pods exist, and LeaderReady creates the workers only once the leader runs; use LeaderCreated").Error())
	}
	for _, tmpl := range []string{"workerTemplate", "leaderTemplate"} {
		fields := []string{"spec", "leaderWorkerTemplate", tmpl}
		if _, found, err := unstructured.NestedMap(obj.Object, fields...); err != nil || !found {
			continue
		}
		fields = append(fields, "metadata", "labels")
		have, _, err := unstructured.NestedStringMap(obj.Object, fields...)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		jobframework.HandDownLabels(labels, &have)
		if err := unstructured.SetNestedStringMap(obj.Object, have, fields...); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
	}
	patched, err := json.Marshal(obj.Object)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, patched)
}
