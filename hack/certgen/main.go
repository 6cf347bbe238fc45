// Command certgen writes a self-signed CA and a serving certificate for
// 127.0.0.1 into a directory, as tls.crt, tls.key and ca.crt: the local
// cluster's API server calls the JobSet controller's webhooks by URL with
// this CA. Berth's own controller manages its certificates itself.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-dev/berth/pkg/certs"
)

func main() {
	dir := flag.String("dir", "", "directory to write tls.crt, tls.key and ca.crt into")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "certgen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	now := time.Now()
	ca, err := certs.NewCA(now)
	if err != nil {
		return err
	}
	serving, err := certs.NewServing(ca, certs.SANs{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, now)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM, "ca.crt": ca.CertPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
