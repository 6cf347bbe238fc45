package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

const (
	// CAValidity is how long a generated CA is valid. It is long because
	// replacing it changes the CA bundle of every webhook.
	CAValidity = 10 * 365 * 24 * time.Hour
	// ServingValidity is how long a generated serving certificate is valid.
	ServingValidity = 365 * 24 * time.Hour

	// backdate starts a certificate's validity before now, so that an API
	// server whose clock is a little behind still accepts it.
	backdate = time.Hour
)

// KeyPair is a PEM-encoded certificate and private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA generates a self-signed CA valid for CAValidity from now.
func NewCA(now time.Time) (KeyPair, error) {
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "berth-webhook-ca"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return generate(template, nil, nil)
}

// NewServing generates a serving certificate for sans, signed by ca and
// valid for ServingValidity from now.
func NewServing(ca KeyPair, sans SANs, now time.Time) (KeyPair, error) {
	caCert, err := parseCert(ca.CertPEM)
	if err != nil {
		return KeyPair{}, fmt.Errorf("CA certificate: %w", err)
	}
	caKey, err := parseKey(ca.KeyPEM)
	if err != nil {
		return KeyPair{}, fmt.Errorf("CA key: %w", err)
	}
	cn := "berth-webhook"
	if len(sans.DNSNames) > 0 {
		cn = sans.DNSNames[0]
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    sans.DNSNames,
		IPAddresses: sans.IPs,
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(ServingValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return generate(template, caCert, caKey)
}

// generate creates a key and a certificate from template, signed by parent
// and parentKey, or self-signed when they are nil.
func generate(template, parent *x509.Certificate, parentKey crypto.Signer) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	// RFC 5280 allows serial numbers of up to 20 octets.
	if template.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)); err != nil {
		return KeyPair{}, err
	}
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	if err != nil {
		return KeyPair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parseCert returns the first certificate in data.
func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	return signer, nil
}
