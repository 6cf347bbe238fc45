package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FrontProxyName is the name the API server's front-proxy certificate
// carries, the one the aggregated APIs of a WithFrontProxy server accept.
const FrontProxyName = "front-proxy-client"

// FrontProxy is the CA of a WithFrontProxy server's front proxy, for a
// test to make client certificates of its own (one with another name, to
// see it refused).
type FrontProxy struct {
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// ClientCertificate is a client certificate for name signed by the
// front-proxy CA.
func (f *FrontProxy) ClientCertificate(name string) (tls.Certificate, error) {
	certPEM, keyPEM, err := f.sign(name)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func (f *FrontProxy) sign(name string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, f.ca, &key.PublicKey, f.caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// WithFrontProxy runs the API server as a cluster with the aggregation
// layer set up: a front-proxy CA of its own (published in
// kube-system/extension-apiserver-authentication), a client certificate
// named FrontProxyName that it proxies requests with, and aggregator
// routing, so that an APIService whose Service's EndpointSlice names this
// machine reaches a process on it. into receives the CA.
func WithFrontProxy(into **FrontProxy) Option {
	return func(env *envtest.Environment) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		now := time.Now()
		template := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "front-proxy-ca"},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(24 * time.Hour),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
		if err != nil {
			return err
		}
		ca, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		f := &FrontProxy{ca: ca, caKey: key}
		certPEM, keyPEM, err := f.sign(FrontProxyName)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "berth-front-proxy-")
		if err != nil {
			return err
		}
		files := map[string][]byte{
			"ca.crt":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			"client.crt": certPEM,
			"client.key": keyPEM,
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return err
			}
		}
		args := env.ControlPlane.GetAPIServer().Configure()
		args.Set("requestheader-client-ca-file", filepath.Join(dir, "ca.crt"))
		args.Set("requestheader-allowed-names", FrontProxyName)
		args.Set("requestheader-username-headers", "X-Remote-User")
		args.Set("requestheader-group-headers", "X-Remote-Group")
		args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
		args.Set("proxy-client-cert-file", filepath.Join(dir, "client.crt"))
		args.Set("proxy-client-key-file", filepath.Join(dir, "client.key"))
		args.Set("enable-aggregator-routing", "true")
		*into = f
		return nil
	}
}
