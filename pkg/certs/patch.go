package certs

import (
	"bytes"
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// webhookCA is the part of a webhook that the CA bundle patch reads.
type webhookCA struct {
	Name     string
	CABundle []byte
}

func validatingWebhooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []webhookCA {
	out := make([]webhookCA, len(c.Webhooks))
	for i, w := range c.Webhooks {
		out[i] = webhookCA{Name: w.Name, CABundle: w.ClientConfig.CABundle}
	}
	return out
}

func mutatingWebhooks(c *admissionregistrationv1.MutatingWebhookConfiguration) []webhookCA {
	out := make([]webhookCA, len(c.Webhooks))
	for i, w := range c.Webhooks {
		out[i] = webhookCA{Name: w.Name, CABundle: w.ClientConfig.CABundle}
	}
	return out
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// caBundlePatch returns a JSON patch that sets caBundle on every webhook
// whose bundle differs, or nil when none does. Each change is guarded by a
// test of the webhook's name, so that a patch computed from a stale read
// of a reordered list fails instead of writing to the wrong webhook.
func caBundlePatch(webhooks []webhookCA, caBundle []byte) ([]byte, error) {
	var ops []jsonPatchOp
	for i, w := range webhooks {
		if bytes.Equal(w.CABundle, caBundle) {
			continue
		}
		ops = append(ops,
			jsonPatchOp{Op: "test", Path: fmt.Sprintf("/webhooks/%d/name", i), Value: w.Name},
			// add sets a member whether or not it is present.
			jsonPatchOp{Op: "add", Path: fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), Value: caBundle},
		)
	}
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}
