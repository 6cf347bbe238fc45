package certs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// The keys of the Secret and the file names in the certificate directory.
// tls.crt and tls.key are what controller-runtime's webhook server reads.
const (
	CACertName = "ca.crt"
	// previousCAName holds, in the Secret only, the CA that ca.crt
	// replaced.
	previousCAName = "ca-previous.crt"
	caKeyName      = "ca.key"
	CertName       = "tls.crt"
	KeyName        = "tls.key"
)

// bundleFromSecret reads a bundle from a Secret's data; Plan judges
// whether it is usable.
func bundleFromSecret(s *corev1.Secret) *Bundle {
	if len(s.Data) == 0 {
		return nil
	}
	return &Bundle{
		CA:         KeyPair{CertPEM: s.Data[CACertName], KeyPEM: s.Data[caKeyName]},
		Serving:    KeyPair{CertPEM: s.Data[CertName], KeyPEM: s.Data[KeyName]},
		PreviousCA: s.Data[previousCAName],
	}
}

func secretData(b *Bundle) map[string][]byte {
	data := map[string][]byte{
		CACertName: b.CA.CertPEM,
		caKeyName:  b.CA.KeyPEM,
		CertName:   b.Serving.CertPEM,
		KeyName:    b.Serving.KeyPEM,
	}
	if len(b.PreviousCA) > 0 {
		data[previousCAName] = b.PreviousCA
	}
	return data
}

// readDir reads the bundle written by writeDir, or returns nil when the
// directory holds none. The CA key is never written to the directory, so
// the bundle can serve but cannot sign.
func readDir(dir string) (*Bundle, error) {
	b := &Bundle{}
	for name, dst := range map[string]*[]byte{CACertName: &b.CA.CertPEM, CertName: &b.Serving.CertPEM, KeyName: &b.Serving.KeyPEM} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		*dst = data
	}
	return b, nil
}

// writeDir writes b's CA certificate and serving pair into dir, leaving
// files that already hold the right content untouched so that file
// watchers see no change.
func writeDir(dir string, b *Bundle) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		// The key before the certificate: a watcher that reloads on the
		// certificate's change then finds the matching key.
		{KeyName, b.Serving.KeyPEM},
		{CertName, b.Serving.CertPEM},
		{CACertName, b.CA.CertPEM},
	}
	for _, f := range files {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic replaces path by a file holding data, so that no reader
// sees half a certificate.
func writeFileAtomic(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
