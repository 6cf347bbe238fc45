package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Fence keeps a replica that may have lost its lease from writing what
// only the leader writes. client-go's leader election notices a lost lease
// only when it next tries to renew: a leader that was paused (SIGSTOP, a
// long garbage collection, a frozen VM) for longer than the lease resumes
// believing it leads, while another replica already does, and the writes
// it had under way go out. The fence counts the lease as held only until
// leaseDuration after the start of its last successful renewal, by the
// monotonic clock, which runs on while the process is paused: no other
// replica can take the lease before then. Past that, it refuses the
// leader's writes (Workloads, queues, jobs) until the lease is renewed.
//
// A write allowed just before a pause would still go out after it: between
// the check and the socket a request waits for a connection, a stream, the
// connection's write lock. So the leader's writes have connections of
// their own (Install), and each write to their sockets is checked again
// right before it is made; a write refused there closes the connection,
// and the API server, which has not seen the whole request, drops it. What
// is left is the system call itself. The fence counts the writes whose
// request was written out after the lease could have passed on; the test
// of two replicas checks that there are none.
type Fence struct {
	leaseDuration time.Duration
	// now is the clock; tests set it.
	now func() time.Time

	mu        sync.Mutex
	renewedAt time.Time

	refused, late atomic.Int64
}

// holdsFor is how close to its end the fence still counts the lease as
// held: a write allowed just before the lease ends still has a second to
// reach the API server, which a busy API server may need.
const holdsFor = time.Second

// NewFence returns a fence for a lease of leaseDuration.
func NewFence(leaseDuration time.Duration) *Fence {
	return &Fence{leaseDuration: leaseDuration, now: time.Now}
}

// Holds reports whether the lease is surely still this replica's at now.
func (f *Fence) Holds(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.renewedAt.IsZero() && now.Sub(f.renewedAt) < f.leaseDuration-min(holdsFor, f.leaseDuration/2)
}

// expired reports whether the lease may belong to another replica at now.
func (f *Fence) expired(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renewedAt.IsZero() || now.Sub(f.renewedAt) >= f.leaseDuration
}

func (f *Fence) renewed(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if at.After(f.renewedAt) {
		f.renewedAt = at
	}
}

// Counts are the writes refused near or past the end of the lease (a
// request, or a socket write that closed a connection of requests), and
// those written out after the lease could have passed to another replica.
func (f *Fence) Counts() (refused, late int64) { return f.refused.Load(), f.late.Load() }

// NewLeaseLock is the Lease lock of leader election, as controller-runtime
// makes it (a unique identity, a client that times out within the renew
// deadline), wrapped by Lock.
func (f *Fence) NewLeaseLock(cfg *rest.Config, namespace, name string, renewDeadline time.Duration) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.Timeout = max(renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())})
	if err != nil {
		return nil, err
	}
	return f.Lock(inner), nil
}

// Lock wraps the leader election's lock so that the fence learns of every
// renewal this replica makes.
func (f *Fence) Lock(inner resourcelock.Interface) resourcelock.Interface {
	return &fencedLock{Interface: inner, fence: f}
}

type fencedLock struct {
	resourcelock.Interface
	fence *Fence
}

// Create takes the lease.
func (l *fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := l.fence.now()
	err := l.Interface.Create(ctx, ler)
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.fence.renewed(start)
	}
	return err
}

// Update renews the lease, or gives it up.
func (l *fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := l.fence.now()
	err := l.Interface.Update(ctx, ler)
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.fence.renewed(start)
	}
	return err
}

// Install fences the leader's writes made with cfg (leaderWrite):
// Workloads and Berth's other kinds, Jobs, JobSets, pods, PodTemplates and
// ProvisioningRequests. They are refused when the lease may be ending, and
// go over connections of their own, made with cfg's TLS and credentials,
// whose socket writes are fenced too. The other requests go as before:
// every replica reads, writes events, its certificates and the CA bundle,
// and the lease itself is how it stays leader.
func (f *Fence) Install(cfg *rest.Config) error {
	wc := rest.CopyConfig(cfg)
	dial := wc.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	wc.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &fencedConn{Conn: conn, fence: f}, nil
	}
	writes, err := rest.TransportFor(wc)
	if err != nil {
		return err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return f.wrapTransport(rt, writes) })
	return nil
}

// wrapTransport sends the leader's writes through writes, if the lease
// surely holds, and every other request through rt.
func (f *Fence) wrapTransport(rt, writes http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if !leaderWrite(req) {
			return rt.RoundTrip(req)
		}
		if !f.Holds(f.now()) {
			f.refused.Add(1)
			return nil, fmt.Errorf("refusing to %s %s: %w", req.Method, req.URL.Path, errLeaseMayHavePassed)
		}
		trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil && f.expired(f.now()) {
				f.late.Add(1)
			}
		}}
		return writes.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	})
}

var errLeaseMayHavePassed = errors.New("this replica's lease may have passed to another")

// fencedConn is a connection that carries only the leader's writes. It
// checks the lease before each write to its socket; once the lease may
// be ending it closes, failing every request it carries.
type fencedConn struct {
	net.Conn
	fence *Fence
}

// Write writes b if the lease surely still holds.
func (c *fencedConn) Write(b []byte) (int, error) {
	if !c.fence.Holds(c.fence.now()) {
		c.fence.refused.Add(1)
		_ = c.Close()
		return 0, errLeaseMayHavePassed
	}
	return c.Conn.Write(b)
}

type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip calls rt.
func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return rt(req) }

// leaderGroups are the API groups that only the leader writes: Berth's
// kinds, the jobs it suspends and starts, and the ProvisioningRequests of
// its admission checks.
var leaderGroups = []string{"/apis/berth.dev/", "/apis/batch/", "/apis/jobset.x-k8s.io/", "/apis/autoscaling.x-k8s.io/"}

// leaderCoreResources are the core kinds that only the leader writes: the
// pods it lets through its gate, stops and deletes, and the PodTemplates of
// ProvisioningRequests. Every replica writes events and its certificates'
// Secret.
var leaderCoreResources = map[string]bool{"pods": true, "podtemplates": true}

func leaderWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	for _, g := range leaderGroups {
		if strings.HasPrefix(req.URL.Path, g) {
			return true
		}
	}
	// /api/v1/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]
	rest, ok := strings.CutPrefix(req.URL.Path, "/api/v1/namespaces/")
	if !ok {
		return false
	}
	parts := strings.SplitN(rest, "/", 3)
	return len(parts) >= 2 && leaderCoreResources[parts[1]]
}
