package jobframework

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// TestDisabledFrameworksWebhooksAnswer: the webhooks of a framework the
// configuration does not enable answer on the paths the manifests name,
// let unlabelled objects and updates through, and refuse a new object
// with the queue label, naming it.
func TestDisabledFrameworksWebhooksAnswer(t *testing.T) {
	Register(&Integration{
		Name:   "example.com/widget",
		GVK:    schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
		NewJob: func() GenericJob { return nil },
	})
	server := webhook.NewServer(webhook.Options{})
	RegisterDisabled(server, []string{"batch/job"})
	review := func(path string, op admissionv1.Operation, labels string) *admissionv1.AdmissionResponse {
		t.Helper()
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "1", Operation: op,
				Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{` + labels + `}}}`)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		server.WebhookMux().ServeHTTP(rec, req)
		out := &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
			t.Fatalf("%s: status %d, body %q: %v", path, rec.Code, rec.Body.String(), err)
		}
		return out.Response
	}
	for _, path := range []string{"/mutate-example-com-v1-widget", "/validate-example-com-v1-widget"} {
		if r := review(path, admissionv1.Create, ""); !r.Allowed {
			t.Errorf("%s: an unlabelled widget refused: %v", path, r.Result)
		}
		if r := review(path, admissionv1.Update, `"berth.dev/queue-name":"main"`); !r.Allowed {
			t.Errorf("%s: an update refused: %v", path, r.Result)
		}
		r := review(path, admissionv1.Create, `"berth.dev/queue-name":"main"`)
		if r.Allowed || !strings.Contains(r.Result.Message, "metadata.labels[berth.dev/queue-name]") ||
			!strings.Contains(r.Result.Message, "example.com/widget is not in its configuration's integrations.frameworks") {
			t.Errorf("%s: a widget naming a queue: allowed %t, %v; want refused, naming the label and the framework", path, r.Allowed, r.Result)
		}
	}
}
