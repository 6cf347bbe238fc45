package certs

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// A create cannot name the object it is allowed for; get and update can.
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=secrets,verbs=get;update,resourceNames=berth-webhook-server-cert

// getSecret returns the certificate Secret, or nil when there is none.
func (m *Manager) getSecret(ctx context.Context) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: m.opts.ServiceNamespace, Name: m.opts.SecretName}
	err := m.reader.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	return secret, nil
}

// stored returns the bundle to judge: the Secret's, which other replicas
// share; else the one in memory; else the one a previous run left in
// CertDir.
func (m *Manager) stored(ctx context.Context, secret *corev1.Secret) *Bundle {
	if secret != nil {
		return bundleFromSecret(secret)
	}
	m.mu.RLock()
	b := m.bundle
	m.mu.RUnlock()
	if b != nil {
		return b
	}
	b, err := readDir(m.opts.CertDir)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Ignoring unreadable certificates", "dir", m.opts.CertDir, "err", err.Error())
		return nil
	}
	return b
}

// errLostRace is another replica writing the Secret between our read and
// our write.
var errLostRace = errors.New("lost the race to write the Secret")

// persist stores b in the Secret. A Secret that cannot be created (e.g. in
// a local cluster without the namespace) is logged and skipped: the
// certificates then live in CertDir and memory only, which is enough for
// one replica. Losing a race to another replica is an error, so that the
// next attempt adopts the winner's CA.
func (m *Manager) persist(ctx context.Context, secret *corev1.Secret, b *Bundle) error {
	data := secretData(b)
	if secret == nil {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: m.opts.ServiceNamespace, Name: m.opts.SecretName},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
		err := m.client.Create(ctx, secret)
		switch {
		case apierrors.IsAlreadyExists(err):
			return fmt.Errorf("another replica created Secret %s/%s first: %w", secret.Namespace, secret.Name, errLostRace)
		case err != nil:
			ctrl.LoggerFrom(ctx).Info("Cannot store the webhook certificates in a Secret; keeping them in the certificate directory only",
				"secret", secret.Namespace+"/"+secret.Name, "dir", m.opts.CertDir, "err", err.Error())
		}
		return nil
	}
	if maps.EqualFunc(secret.Data, data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return nil
	}
	// An update, not a patch: the resourceVersion it carries makes a
	// concurrent renewal by another replica a conflict.
	secret.Data = data
	if err := m.client.Update(ctx, secret); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("another replica renewed Secret %s/%s first: %w", secret.Namespace, secret.Name, errLostRace)
		}
		return fmt.Errorf("storing the webhook certificates in Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}
