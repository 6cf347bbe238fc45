package controllermanager

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"

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
	rt := f.WrapTransport(roundTripper(func(req *http.Request) (*http.Response, error) {
		sent++
		// Paused between the check and the write, as a process under
		// SIGSTOP could be.
		now = now.Add(answerTakes)
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.WroteRequest != nil {
			trace.WroteRequest(httptrace.WroteRequestInfo{})
		}
		return &http.Response{StatusCode: http.StatusOK}, nil
	}))
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
