package jobframework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// disabledWebhook answers, for a framework the configuration does not
// enable, the webhooks that the shipped manifests register for every
// framework (config/webhook). Without it, the API server would get a 404
// for each object of the kind the webhooks match, and refuse to create
// it: a cluster with Kubeflow Trainer whose Berth does not queue TrainJobs
// could create no TrainJob in a managed namespace. It lets every object
// through, but refuses a new one that names a queue, naming the label,
// which Berth would otherwise leave to run outside its quota without a
// word.
type disabledWebhook struct {
	integration *Integration
}

// Handle lets req through, unless it creates an object with the queue
// label.
func (d disabledWebhook) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	meta := &metav1.PartialObjectMetadata{}
	if err := json.Unmarshal(req.Object.Raw, meta); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	q := meta.Labels[berthv1alpha1.QueueNameLabel]
	if q == "" {
		return admission.Allowed("")
	}
	ferr := field.Forbidden(field.NewPath("metadata", "labels").Key(berthv1alpha1.QueueNameLabel), fmt.Sprintf(
		"names LocalQueue %q, but Berth does not queue %ss here: the framework %s is not in its configuration's integrations.frameworks",
		q, d.integration.GVK.Kind, d.integration.Name))
	return admission.Denied(ferr.Error())
}

// webhookPath is the path controller-runtime's builder serves a kind's
// webhook of the given kind ("mutate" or "validate") on.
func webhookPath(verb string, gvk schema.GroupVersionKind) string {
	return "/" + verb + "-" + strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
}

// RegisterDisabled answers the webhooks of the registered frameworks with
// a job reconciler of their own (no Setup of their own) that enabled does
// not name: see disabledWebhook.
func RegisterDisabled(server webhook.Server, enabled []string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for name, i := range registry {
		if i.Setup != nil || i.NewJob == nil || slices.Contains(enabled, name) {
			continue
		}
		for _, verb := range []string{"mutate", "validate"} {
			server.Register(webhookPath(verb, i.GVK), &webhook.Admission{Handler: disabledWebhook{integration: i}})
		}
	}
}
