package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Retry delays after a failed check: short at first, because the webhooks
// cannot serve until the first check succeeds.
const (
	retryMin = 500 * time.Millisecond
	retryMax = time.Minute
)

// Manager generates, stores, serves and renews the webhook server's
// certificates. It runs on every replica, not only the leader, since every
// replica serves webhooks.
type Manager struct {
	// client writes the Secret and patches the webhook configurations.
	client client.Client
	// reader reads them uncached, so that the process does not cache
	// every Secret of the cluster to read one.
	reader client.Reader
	opts   Options
	sans   SANs

	ready     chan struct{}
	readyOnce sync.Once

	mu     sync.RWMutex
	bundle *Bundle
	cert   *tls.Certificate
}

var (
	_ manager.Runnable               = (*Manager)(nil)
	_ manager.LeaderElectionRunnable = (*Manager)(nil)
)

// New returns a Manager for opts. It has no client until SetupWithManager,
// so that cmd/berth can pass TLSOpt to the webhook server before the
// controller manager exists.
func New(opts Options) *Manager {
	opts.setDefaults()
	return &Manager{
		opts:  opts,
		sans:  ServiceSANs(append([]string{opts.ServiceName}, opts.ExtraServiceNames...), opts.ServiceNamespace, opts.ExtraIPs),
		ready: make(chan struct{}),
	}
}

// Start checks the certificates at once and then every CheckInterval,
// until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	if m.client == nil || m.reader == nil {
		return errors.New("webhook certificates: SetupWithManager was not called")
	}
	log := ctrl.LoggerFrom(ctx).WithName("webhook-certs")
	ctx = ctrl.LoggerInto(ctx, log)
	delay := retryMin
	for {
		wait := m.opts.CheckInterval
		if err := m.ensure(ctx); err != nil {
			log.Error(err, "Checking the webhook certificates failed; retrying", "after", delay)
			wait, delay = delay, min(2*delay, retryMax)
		} else {
			delay = retryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection is false: every replica serves webhooks and needs a
// certificate.
func (m *Manager) NeedLeaderElection() bool { return false }

// Ready is closed once a serving certificate is in memory and in CertDir.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Checker is a readiness check that passes once Ready is closed.
func (m *Manager) Checker() healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-m.ready:
			return nil
		default:
			return errors.New("the webhook certificates are not ready yet")
		}
	}
}

// TLSOpt makes a TLS server present the current serving certificate, and
// its successors without a restart. Pass it in the webhook server's
// TLSOpts; the server can then start before the certificate exists, and
// refuses handshakes until it does.
func (m *Manager) TLSOpt(cfg *tls.Config) {
	cfg.GetCertificate = m.GetCertificate
}

// GetCertificate returns the current serving certificate, in the shape of
// tls.Config.GetCertificate.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.cert == nil {
		return nil, errors.New("no webhook serving certificate yet")
	}
	return m.cert, nil
}

// CABundle returns the PEM CA certificates that the webhooks must trust,
// or nil before the first certificate.
func (m *Manager) CABundle() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.bundle == nil {
		return nil
	}
	return m.bundle.TrustedCAs()
}

// ensure brings the stored, written, served and trusted certificates to a
// bundle that Plan accepts. A replica that loses the race to create the
// Secret adopts the winner's at once: two replicas that served and trusted
// CAs of their own would each write its own into the webhooks, in turn.
func (m *Manager) ensure(ctx context.Context) error {
	err := m.ensureOnce(ctx)
	if errors.Is(err, errLostRace) {
		ctrl.LoggerFrom(ctx).Info("Another replica stored the webhook certificates first; adopting them")
		err = m.ensureOnce(ctx)
	}
	return err
}

func (m *Manager) ensureOnce(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx)
	now := m.opts.Clock.Now()
	secret, err := m.getSecret(ctx)
	if err != nil {
		return err
	}
	stored := m.stored(ctx, secret)
	action, reason := Plan(stored, m.sans, now)
	next, err := renew(stored, action, m.sans, now)
	if err != nil {
		return err
	}
	if action != Keep {
		log.Info("Renewing the webhook certificates", "action", action, "reason", reason)
	}
	if err := m.persist(ctx, secret, next); err != nil {
		return err
	}
	if err := writeDir(m.opts.CertDir, next); err != nil {
		return fmt.Errorf("writing the certificates to %s: %w", m.opts.CertDir, err)
	}
	if err := m.use(next); err != nil {
		return err
	}
	return m.injectCABundles(ctx)
}

// use makes b the served bundle.
func (m *Manager) use(b *Bundle) error {
	cert, err := tls.X509KeyPair(b.Serving.CertPEM, b.Serving.KeyPEM)
	if err != nil {
		return fmt.Errorf("loading the serving certificate: %w", err)
	}
	m.mu.Lock()
	m.bundle, m.cert = b, &cert
	m.mu.Unlock()
	m.readyOnce.Do(func() { close(m.ready) })
	return nil
}
