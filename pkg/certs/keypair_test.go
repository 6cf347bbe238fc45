package certs

import (
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNewCAAndServing(t *testing.T) {
	ca, err := NewCA(t0)
	if err != nil {
		t.Fatal(err)
	}
	sans := ServiceSANs([]string{"svc"}, "ns", []net.IP{net.ParseIP("127.0.0.1")})
	serving, err := NewServing(ca, sans, t0)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := parseCert(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCert(serving.CertPEM)
	if err != nil {
		t.Fatal(err)
	}

	type summary struct {
		IsCA      bool
		NotBefore time.Time
		NotAfter  time.Time
		DNSNames  []string
		IPs       []string
	}
	summarize := func(c *x509.Certificate) summary {
		s := summary{IsCA: c.IsCA, NotBefore: c.NotBefore, NotAfter: c.NotAfter, DNSNames: c.DNSNames}
		for _, ip := range c.IPAddresses {
			s.IPs = append(s.IPs, ip.String())
		}
		return s
	}
	cases := map[string]struct {
		cert *x509.Certificate
		want summary
	}{
		"CA": {
			cert: caCert,
			want: summary{IsCA: true, NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(10 * 365 * 24 * time.Hour)},
		},
		"serving": {
			cert: cert,
			want: summary{
				NotBefore: t0.Add(-time.Hour),
				NotAfter:  t0.Add(365 * 24 * time.Hour),
				DNSNames:  []string{"svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"},
				IPs:       []string{"127.0.0.1"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(tc.cert)); diff != "" {
				t.Errorf("certificate (-want +got):\n%s", diff)
			}
		})
	}

	// The API server verifies the serving certificate for the name or IP
	// it dials, against the CA bundle.
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	for _, host := range []string{"svc.ns.svc", "127.0.0.1"} {
		opts := x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: t0}
		if _, err := cert.Verify(opts); err != nil {
			t.Errorf("verifying for %s: %v", host, err)
		}
	}
}

func TestNewServingNeedsTheCAKey(t *testing.T) {
	ca, err := NewCA(t0)
	if err != nil {
		t.Fatal(err)
	}
	ca.KeyPEM = nil
	if _, err := NewServing(ca, ServiceSANs([]string{"svc"}, "ns", nil), t0); err == nil {
		t.Error("NewServing without the CA key succeeded")
	}
}
