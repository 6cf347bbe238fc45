package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"
)

// Bundle is what the Manager keeps: the CA and the serving certificate it
// signed.
type Bundle struct {
	// CA's KeyPEM is empty when the bundle was read from a certificate
	// directory, which holds the CA certificate only.
	CA      KeyPair
	Serving KeyPair
	// PreviousCA is the certificate of the CA this one replaced, while it
	// is valid: the webhooks trust both, so that a replica that still
	// serves a certificate of the old CA is not refused until it adopts
	// the new one.
	PreviousCA []byte
}

// TrustedCAs is the CA bundle the webhooks must trust for b: its CA, and
// the one it replaced.
func (b *Bundle) TrustedCAs() []byte {
	if len(b.PreviousCA) == 0 {
		return b.CA.CertPEM
	}
	return append(append(bytes.Clone(b.CA.CertPEM), '\n'), b.PreviousCA...)
}

// Action is what Plan decides to do with a bundle.
type Action int

const (
	// Keep the bundle as it is.
	Keep Action = iota
	// RenewServing issues a new serving certificate from the same CA, so
	// that the webhooks' CA bundles stay valid.
	RenewServing
	// RenewAll generates a new CA and a new serving certificate.
	RenewAll
)

// String names the action for logs.
func (a Action) String() string {
	switch a {
	case Keep:
		return "Keep"
	case RenewServing:
		return "RenewServing"
	case RenewAll:
		return "RenewAll"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Plan decides whether b can serve for sans at now, and if not what to
// renew and why.
func Plan(b *Bundle, sans SANs, now time.Time) (Action, string) {
	if b == nil {
		return RenewAll, "no certificates yet"
	}
	ca, err := parseCert(b.CA.CertPEM)
	if err != nil {
		return RenewAll, fmt.Sprintf("the CA certificate is unreadable: %v", err)
	}
	if dueForRenewal(ca, now) {
		return RenewAll, fmt.Sprintf("the CA expires at %s", ca.NotAfter.Format(time.RFC3339))
	}
	reason := servingProblem(b.Serving, ca, sans, now)
	if reason == "" {
		return Keep, ""
	}
	// Without the CA key (a bundle read back from the certificate
	// directory) nothing can be signed with the current CA.
	if _, err := parseKey(b.CA.KeyPEM); err != nil {
		return RenewAll, reason + ", and the CA key is not available"
	}
	return RenewServing, reason
}

// servingProblem says why kp cannot serve for sans at now, or returns ""
// when it can.
func servingProblem(kp KeyPair, ca *x509.Certificate, sans SANs, now time.Time) string {
	if _, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
		return fmt.Sprintf("the serving certificate and key are unusable: %v", err)
	}
	cert, err := parseCert(kp.CertPEM)
	if err != nil {
		return fmt.Sprintf("the serving certificate is unreadable: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	opts := x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, err := cert.Verify(opts); err != nil {
		return fmt.Sprintf("the serving certificate does not verify against the CA: %v", err)
	}
	if got := (SANs{DNSNames: cert.DNSNames, IPs: cert.IPAddresses}); !got.equal(sans) {
		return fmt.Sprintf("the serving certificate is for %v %v, not %v %v", got.DNSNames, got.IPs, sans.DNSNames, sans.IPs)
	}
	if dueForRenewal(cert, now) {
		return fmt.Sprintf("the serving certificate expires at %s", cert.NotAfter.Format(time.RFC3339))
	}
	return ""
}

// dueForRenewal tells whether less than a sixth of cert's validity
// remains: two months of a one-year certificate, enough for an hourly
// check to renew it long before any client sees it expire.
func dueForRenewal(cert *x509.Certificate, now time.Time) bool {
	validity := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Sub(now) < validity/6
}

// renew carries out action on b.
func renew(b *Bundle, action Action, sans SANs, now time.Time) (*Bundle, error) {
	next := &Bundle{}
	switch action {
	case Keep:
		return b, nil
	case RenewServing:
		next.CA = b.CA
	case RenewAll:
		ca, err := NewCA(now)
		if err != nil {
			return nil, fmt.Errorf("generating the CA: %w", err)
		}
		next.CA = ca
		if b != nil {
			if old, err := parseCert(b.CA.CertPEM); err == nil && now.Before(old.NotAfter) {
				next.PreviousCA = b.CA.CertPEM
			}
		}
	}
	serving, err := NewServing(next.CA, sans, now)
	if err != nil {
		return nil, fmt.Errorf("generating the serving certificate: %w", err)
	}
	next.Serving = serving
	return next, nil
}
