package controllermanager

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// lock is a lease lock that always succeeds.
type lock struct{ resourcelock.Interface }

func (lock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (lock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (lock) Identity() string                                                { return "me" }

func TestFence(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := NewFence(6 * time.Second)
	f.now = func() time.Time { return now }
	// The API server's answer takes answerTakes of the fence's clock.
	var answerTakes time.Duration
	sent := 0
	send := roundTripper(func(req *http.Request) (*http.Response, error) {
		sent++
		// Paused between the check and the write, as a process under
		// SIGSTOP could be.
		now = now.Add(answerTakes)
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.WroteRequest != nil {
			trace.WroteRequest(httptrace.WroteRequestInfo{})
		}
		return &http.Response{StatusCode: http.StatusOK}, nil
	})
	rt := f.wrapTransport(send, send)
	do := func(method, path string) error {
		req, _ := http.NewRequest(method, "https://api"+path, nil)
		_, err := rt.RoundTrip(req)
		return err
	}
	l := f.Lock(lock{})
	const status = "/apis/berth.dev/v1alpha1/namespaces/ns/workloads/w/status"

	type step struct {
		name string
		do   func()
		// the request and whether it must be sent
		method, path string
		wantSent     bool
	}
	steps := []step{
		{name: "a write before the lease is taken is refused", method: http.MethodPut, path: status},
		{name: "a read is never fenced", method: http.MethodGet, path: status, wantSent: true},
		{name: "events and certificates are every replica's", method: http.MethodPost, path: "/api/v1/namespaces/berth-system/secrets", wantSent: true},
		{name: "after the lease is taken", do: func() { _ = l.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) },
			method: http.MethodPut, path: status, wantSent: true},
		{name: "a job write within the lease", do: func() { now = now.Add(4 * time.Second) }, method: http.MethodPut, path: "/apis/batch/v1/namespaces/ns/jobs/j", wantSent: true},
		{name: "less than a second before its end", do: func() { now = now.Add(1500 * time.Millisecond) }, method: http.MethodPatch, path: status},
		{name: "renewed again", do: func() { _ = l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) },
			method: http.MethodPost, path: "/apis/berth.dev/v1alpha1/namespaces/ns/workloads", wantSent: true},
		{name: "another replica's record is no renewal", do: func() {
			now = now.Add(7 * time.Second)
			_ = l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "other"})
		}, method: http.MethodPut, path: status},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		before := sent
		err := do(s.method, s.path)
		if got := sent > before; got != s.wantSent || (err == nil) != s.wantSent {
			t.Errorf("%s: sent %v (error %v), want sent %v", s.name, got, err, s.wantSent)
		}
	}
	if refused, late := f.Counts(); refused != 3 || late != 0 {
		t.Errorf("refused %d, late %d; want 3 and 0", refused, late)
	}

	// A write allowed within the lease but written out past it is late.
	_ = l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	answerTakes = 10 * time.Second
	if err := do(http.MethodPut, status); err != nil {
		t.Fatal(err)
	}
	if _, late := f.Counts(); late != 1 {
		t.Errorf("late %d, want 1", late)
	}
}

// TestFencedConnections: a leader's write that passed the fence but
// reaches its socket only after the lease may have passed (the process was
// paused in between, here while its body was read) is not sent: the API
// server never sees it. Reads go over their own connections as before.
func TestFencedConnections(t *testing.T) {
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The API server decodes only a whole body.
		if _, err := io.ReadAll(r.Body); err == nil {
			received.Add(1)
		}
	}))
	defer srv.Close()
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := NewFence(6 * time.Second)
	f.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	pause := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	_ = f.Lock(lock{}).Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})

	cfg := &rest.Config{Host: srv.URL}
	if err := f.Install(cfg); err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, body string, paused time.Duration) error {
		req, _ := http.NewRequest(method, srv.URL+"/apis/batch/v1/namespaces/ns/jobs/j", pausing{strings.NewReader(body), func() { pause(paused) }})
		req.ContentLength = int64(len(body))
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if err := do(http.MethodPatch, "{}", 0); err != nil || received.Load() != 1 {
		t.Fatalf("a write within the lease: error %v, %d received; want it sent", err, received.Load())
	}
	// Paused for 10s while the request is on its way.
	if err := do(http.MethodPatch, "{}", 10*time.Second); err == nil || received.Load() != 1 {
		t.Errorf("a write paused past the lease: error %v, %d received; want it refused and not received", err, received.Load())
	}
	if err := do(http.MethodGet, "", 0); err != nil || received.Load() != 2 {
		t.Errorf("a read past the lease: error %v, %d received; want it sent", err, received.Load())
	}
	if refused, late := f.Counts(); refused != 1 || late != 0 {
		t.Errorf("refused %d, late %d; want 1 and 0", refused, late)
	}
}

// pausing is a request body whose reads call pause.
type pausing struct {
	io.Reader
	pause func()
}

func (p pausing) Read(b []byte) (int, error) {
	p.pause()
	return p.Reader.Read(b)
}

// TestLeaderWrites: every write that admits, stops or provisions for a
// workload is the leader's, the pods it lets through and deletes among
// them; events and certificates are not.
func TestLeaderWrites(t *testing.T) {
	cases := map[string]struct {
		method, path string
		want         bool
	}{
		"a Workload's status":           {http.MethodPut, "/apis/berth.dev/v1alpha1/namespaces/ns/workloads/w/status", true},
		"a Job":                         {http.MethodPatch, "/apis/batch/v1/namespaces/ns/jobs/j", true},
		"a pod let through its gate":    {http.MethodPut, "/api/v1/namespaces/ns/pods/p", true},
		"a pod stopped":                 {http.MethodDelete, "/api/v1/namespaces/ns/pods/p", true},
		"a ProvisioningRequest":         {http.MethodPost, "/apis/autoscaling.x-k8s.io/v1/namespaces/ns/provisioningrequests", true},
		"a PodTemplate":                 {http.MethodPost, "/api/v1/namespaces/ns/podtemplates", true},
		"an event":                      {http.MethodPost, "/api/v1/namespaces/ns/events", false},
		"the certificates' Secret":      {http.MethodPut, "/api/v1/namespaces/berth-system/secrets/berth-webhook-server-cert", false},
		"a read of pods":                {http.MethodGet, "/api/v1/namespaces/ns/pods", false},
		"a namespace named pods":        {http.MethodPost, "/api/v1/namespaces/pods/events", false},
		"the lease is how it stays one": {http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases/berth.dev", false},
	}
	for name, tc := range cases {
		req, _ := http.NewRequest(tc.method, "https://api"+tc.path, nil)
		if got := leaderWrite(req); got != tc.want {
			t.Errorf("%s: leader's write %v, want %v", name, got, tc.want)
		}
	}
}
