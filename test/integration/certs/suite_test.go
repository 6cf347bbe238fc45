package certs

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/util/apiserver"
)

// server is the one API server of this suite.
var server *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunSuite(m, &server, nil))
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	return apiserver.Context(t, 45*time.Second)
}

// eventually calls f until it returns nil, and fails the test with f's
// last error if that does not happen within 20 s.
func eventually(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
