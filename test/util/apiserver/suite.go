package apiserver

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// RunSuite runs a test suite against its own API server: it starts the
// server with opts into *s, runs setup (when not nil; it may return a
// function undoing it), runs the tests and stops everything. It returns
// the exit code for os.Exit in TestMain.
func RunSuite(m *testing.M, s **Server, setup func() (func(), error), opts ...Option) int {
	server, err := Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*s = server
	defer func() {
		if err := server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Printf("integration: running against a real kube-apiserver %s at %s\n", server.Version, server.Config.Host)
	if setup != nil {
		teardown, err := setup()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if teardown != nil {
			defer teardown()
		}
	}
	return m.Run()
}

// Context is a context for one test step against the server: it ends
// with the test or after timeout, whichever comes first.
func Context(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}
