package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/berth-dev/berth/pkg/certs"
	"github.com/berth-dev/berth/test/util/apiserver"
)

const (
	namespace       = "berth-system"
	secretName      = "berth-webhook-server-cert"
	mutatingName    = "berth-mutating-webhook-configuration"
	selectLabel     = "certs.berth.dev/mutate"
	mutatedLabel    = "certs.berth.dev/mutated"
	mutatingWebhook = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: berth-mutating-webhook-configuration
webhooks:
- name: mconfigmap.certs.berth.dev
  clientConfig:
    url: https://127.0.0.1:%d/mutate
    caBundle: ""
  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [configmaps]
  objectSelector:
    matchLabels:
      certs.berth.dev/mutate: "true"
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
`
)

// The controller runs outside the cluster, as in the local cluster: the
// API server reaches its webhook by URL at 127.0.0.1, which the serving
// certificate must name, and the webhook configuration starts without a
// CA bundle.
func TestAPIServerTrustsGeneratedCertificates(t *testing.T) {
	ctx := testContext(t)
	if err := server.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	manifest := filepath.Join(t.TempDir(), "webhook.yaml")
	if err := os.WriteFile(manifest, fmt.Appendf(nil, mutatingWebhook, port), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := server.Kubectl(ctx, "apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, stderr)
	}

	certsMgr := startManager(ctx, t, port)
	select {
	case <-certsMgr.Ready():
	case <-ctx.Done():
		t.Fatal("the certificates were never ready")
	}

	createMutated(ctx, t, "first")
	assertCABundle(ctx, t, certsMgr.CABundle())
	secret := &corev1.Secret{}
	if err := server.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secretName}, secret); err != nil {
		t.Errorf("the certificates were not stored in a Secret: %v", err)
	}

	// Re-applying the manifest empties the CA bundle; the manager writes
	// it back.
	stdout, stderr, err := server.Kubectl(ctx, "apply", "-f", manifest, "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}")
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, stderr)
	}
	if stdout != "" {
		t.Fatalf("re-applying the manifest left caBundle %q, want it emptied", stdout)
	}
	assertCABundle(ctx, t, certsMgr.CABundle())
	createMutated(ctx, t, "second")
}

// startManager runs a controller manager with the certificate manager and
// a webhook server on port that labels ConfigMaps, until the test ends.
func startManager(ctx context.Context, t *testing.T, port int) *certs.Manager {
	t.Helper()
	scheme, err := apiserver.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	certsMgr := certs.New(certs.Options{
		ServiceName:                      "berth-webhook-service",
		ServiceNamespace:                 namespace,
		SecretName:                       secretName,
		ExtraIPs:                         []net.IP{net.ParseIP("127.0.0.1")},
		CertDir:                          t.TempDir(),
		MutatingWebhookConfigurationName: mutatingName,
	})
	mgr, err := ctrl.NewManager(server.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    "127.0.0.1",
			Port:    port,
			TLSOpts: []func(*tls.Config){certsMgr.TLSOpt},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr.GetWebhookServer().Register("/mutate", &webhook.Admission{Handler: admission.HandlerFunc(addLabel)})
	if err := certsMgr.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return certsMgr
}

// addLabel marks the ConfigMaps it admits.
func addLabel(_ context.Context, req admission.Request) admission.Response {
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(req.Object.Raw, cm); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[mutatedLabel] = "true"
	mutated, err := json.Marshal(cm)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// createMutated creates a ConfigMap through the webhook, retrying while the
// API server does not trust the webhook yet, and checks that the webhook
// mutated it.
func createMutated(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{selectLabel: "true"}}}
	eventually(ctx, t, "creating a ConfigMap through the webhook", func() error {
		return server.Client.Create(ctx, cm.DeepCopy())
	})
	got := &corev1.ConfigMap{}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[mutatedLabel] != "true" {
		t.Errorf("ConfigMap %s has labels %v; want the webhook's %s", name, got.Labels, mutatedLabel)
	}
}

func assertCABundle(ctx context.Context, t *testing.T, want []byte) {
	t.Helper()
	eventually(ctx, t, "waiting for the CA bundle", func() error {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := server.Client.Get(ctx, client.ObjectKey{Name: mutatingName}, c); err != nil {
			return err
		}
		if got := c.Webhooks[0].ClientConfig.CABundle; !bytes.Equal(got, want) {
			return errors.New("the webhook's caBundle is not the manager's CA")
		}
		return nil
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
