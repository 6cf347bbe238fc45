package e2e

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serviceProxy stands in for the Service in front of the controller's
// replicas in a cluster (kube-proxy's work): the API server calls the
// webhooks at one address, and each connection goes to a replica that
// accepts it, in turn, the others when one is down. It passes TLS through
// untouched.
type serviceProxy struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint32
	wg       sync.WaitGroup
}

func startServiceProxy(t *testing.T, addr string, backends ...string) *serviceProxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the webhook's address is taken: %v", err)
	}
	p := &serviceProxy{ln: ln, backends: backends}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(conn)
			}()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *serviceProxy) stop() {
	_ = p.ln.Close()
	p.wg.Wait()
}

// serve pipes conn to the first replica, from the next in turn, that
// accepts a connection.
func (p *serviceProxy) serve(conn net.Conn) {
	defer conn.Close()
	start := int(p.next.Add(1))
	var backend net.Conn
	for i := range p.backends {
		c, err := net.DialTimeout("tcp", p.backends[(start+i)%len(p.backends)], 500*time.Millisecond)
		if err == nil {
			backend = c
			break
		}
	}
	if backend == nil {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(backend, conn)
	go pipe(conn, backend)
	// Either side's end ends both, as a replica's death resets the
	// connections kube-proxy forwarded to it.
	<-done
	_ = backend.Close()
	_ = conn.Close()
	<-done
}
