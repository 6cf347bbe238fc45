package certs

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	testNamespace = "berth-system"
	testSecret    = "berth-webhook-server-cert"
	testVWC       = "berth-validating-webhook-configuration"
	testMWC       = "berth-mutating-webhook-configuration"
)

func webhookConfigurations() []client.Object {
	return []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: testVWC},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "a.berth.dev"}, {Name: "b.berth.dev"}},
		},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: testMWC},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "c.berth.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("stale")}}},
		},
	}
}

type testEnv struct {
	client client.Client
	clock  *clocktesting.FakePassiveClock
	dir    string
}

func newTestEnv(t *testing.T, funcs interceptor.Funcs) *testEnv {
	return &testEnv{
		client: interceptor.NewClient(fake.NewClientBuilder().WithObjects(webhookConfigurations()...).Build(), funcs),
		clock:  clocktesting.NewFakePassiveClock(t0),
		dir:    t.TempDir(),
	}
}

// replica starts a Manager as a new process would, sharing the cluster
// and the certificate directory.
func (e *testEnv) replica(t *testing.T, extraIPs ...net.IP) *Manager {
	t.Helper()
	m := New(Options{
		ServiceName:                        "berth-webhook-service",
		ServiceNamespace:                   testNamespace,
		SecretName:                         testSecret,
		ExtraIPs:                           extraIPs,
		CertDir:                            e.dir,
		ValidatingWebhookConfigurationName: testVWC,
		MutatingWebhookConfigurationName:   testMWC,
		Clock:                              e.clock,
	})
	m.client, m.reader = e.client, e.client
	if err := m.ensure(context.Background()); err != nil {
		t.Fatalf("ensure: %v", err)
	}
	select {
	case <-m.Ready():
	default:
		t.Fatal("not ready after a successful check")
	}
	if err := m.Checker()(nil); err != nil {
		t.Errorf("Checker: %v", err)
	}
	return m
}

// check asserts that m serves, writes and injects one consistent bundle,
// stored in the Secret when wantSecret.
func (e *testEnv) check(t *testing.T, m *Manager, wantSecret bool) *Bundle {
	t.Helper()
	ctx := context.Background()
	m.mu.RLock()
	b := m.bundle
	m.mu.RUnlock()
	if action, reason := Plan(b, m.sans, e.clock.Now()); action != Keep {
		t.Errorf("Plan of the served bundle = %v (%s)", action, reason)
	}
	if _, err := m.GetCertificate(nil); err != nil {
		t.Errorf("GetCertificate: %v", err)
	}
	for name, want := range map[string][]byte{CACertName: b.CA.CertPEM, CertName: b.Serving.CertPEM, KeyName: b.Serving.KeyPEM} {
		got, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s in the certificate directory differs from the served bundle (err %v)", name, err)
		}
	}
	secret := &corev1.Secret{}
	err := e.client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: testSecret}, secret)
	switch {
	case !wantSecret && !apierrors.IsNotFound(err):
		t.Errorf("Secret: got error %v, want NotFound", err)
	case wantSecret && err != nil:
		t.Errorf("Secret: %v", err)
	case wantSecret:
		if diff := cmp.Diff(b, bundleFromSecret(secret)); diff != "" {
			t.Errorf("Secret (-served +stored):\n%s", diff)
		}
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: testVWC}, vwc); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Get(ctx, client.ObjectKey{Name: testMWC}, mwc); err != nil {
		t.Fatal(err)
	}
	want := []webhookCA{{"a.berth.dev", b.TrustedCAs()}, {"b.berth.dev", b.TrustedCAs()}, {"c.berth.dev", b.TrustedCAs()}}
	if diff := cmp.Diff(want, append(validatingWebhooks(vwc), mutatingWebhooks(mwc)...)); diff != "" {
		t.Errorf("CA bundles (-want +got):\n%s", diff)
	}
	return b
}

func TestManagerWithSecret(t *testing.T) {
	env := newTestEnv(t, interceptor.Funcs{})
	first := env.check(t, env.replica(t), true)

	// Another replica, or a restart, adopts the stored certificates.
	if second := env.check(t, env.replica(t), true); !cmp.Equal(first, second) {
		t.Error("a second replica did not adopt the stored bundle")
	}

	// Ten months on, the serving certificate is renewed under the same CA.
	env.clock.SetTime(t0.Add(320 * day))
	renewed := env.check(t, env.replica(t), true)
	if string(renewed.CA.CertPEM) != string(first.CA.CertPEM) {
		t.Error("renewing the serving certificate replaced the CA")
	}
	if string(renewed.Serving.CertPEM) == string(first.Serving.CertPEM) {
		t.Error("the serving certificate was not renewed")
	}

	// A new extra IP needs a new serving certificate.
	withIP := env.check(t, env.replica(t, net.ParseIP("127.0.0.1")), true)
	if string(withIP.Serving.CertPEM) == string(renewed.Serving.CertPEM) {
		t.Error("the serving certificate was not reissued for the new IP")
	}
}

// Two replicas agree on one CA: the one that loses the race to create the
// Secret adopts the winner's, and after one renews the CA the other adopts
// it on the webhook configurations' change, instead of writing its own CA
// back. Both CAs are trusted meanwhile.
func TestReplicasAgreeOnTheCA(t *testing.T) {
	var patches int
	env := newTestEnv(t, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	a := env.replica(t)
	// b starts before the Secret exists, and loses the race to create it.
	b := New(a.opts)
	stale := true
	b.client, b.reader = env.client, interceptor.NewClient(env.client.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok && stale {
				stale = false
				return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	if err := b.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := env.check(t, a, true)
	if got := env.check(t, b, true); !cmp.Equal(first, got) {
		t.Fatal("the replica that lost the race serves another bundle")
	}

	// Near the CA's expiry a renews everything; b is told by the change of
	// the webhook configurations.
	env.clock.SetTime(t0.Add(9 * 365 * day))
	if err := a.ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := patches
	for range 3 {
		for _, m := range []*Manager{b, a} {
			if _, err := m.Reconcile(context.Background(), reconcile.Request{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	renewed := env.check(t, a, true)
	if got := env.check(t, b, true); !cmp.Equal(renewed, got) {
		t.Error("after the renewal the replicas serve different bundles")
	}
	if string(renewed.CA.CertPEM) == string(first.CA.CertPEM) || string(renewed.PreviousCA) != string(first.CA.CertPEM) {
		t.Error("the renewal did not keep the previous CA trusted beside the new one")
	}
	if patches != before {
		t.Errorf("%d patches of the webhook configurations after both replicas agreed, want none", patches-before)
	}
}

func TestManagerWithoutSecret(t *testing.T) {
	// As in a local cluster without the namespace.
	env := newTestEnv(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, testNamespace)
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	first := env.check(t, env.replica(t), false)

	// A restart serves what the directory holds.
	if second := env.check(t, env.replica(t), false); string(second.Serving.CertPEM) != string(first.Serving.CertPEM) {
		t.Error("a restart did not reuse the certificates in the directory")
	}

	// Without the CA key, renewal replaces the CA too.
	env.clock.SetTime(t0.Add(320 * day))
	if renewed := env.check(t, env.replica(t), false); string(renewed.CA.CertPEM) == string(first.CA.CertPEM) {
		t.Error("the CA was not replaced")
	}
}

func TestManagerNotReadyBeforeCertificates(t *testing.T) {
	m := New(Options{})
	if err := m.Checker()(nil); err == nil {
		t.Error("Checker passed before any certificate")
	}
	if _, err := m.GetCertificate(nil); err == nil {
		t.Error("GetCertificate succeeded before any certificate")
	}
}
