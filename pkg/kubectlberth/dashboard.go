package kubectlberth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/pkg/dashboard"
)

// dashboard serves the pages of kubectl berth dashboard (pkg/dashboard)
// to the browser of the user who started it, and to no one else.
type localDashboard struct {
	pages http.Handler
	// hosts are the Host headers it answers: 127.0.0.1 and localhost on its
	// port. Any other is a page of some web site reaching for the user's
	// credentials through DNS rebinding, and is refused.
	hosts map[string]bool
	// token is in the address the command prints; the browser that opens
	// it keeps it in a cookie. Other users of the machine reach the port
	// but not the token, and so not what the user may read.
	token string
}

// cookie is the name of the cookie that holds the token.
const cookie = "berth-dashboard"

func newDashboard(src dashboard.Source, kubeContext string, port int) (*localDashboard, error) {
	pages, err := dashboard.NewPages()
	if err != nil {
		return nil, err
	}
	hosts := map[string]bool{}
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		hosts[h+":"+strconv.Itoa(port)] = true
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	return &localDashboard{pages: pages.Handler(src, kubeContext), hosts: hosts, token: hex.EncodeToString(token)}, nil
}

func (d *localDashboard) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.hosts[r.Host] {
			http.Error(w, "the dashboard answers only to 127.0.0.1 and localhost", http.StatusForbidden)
			return
		}
		if q := r.URL.Query(); q.Has("token") {
			if subtle.ConstantTimeCompare([]byte(q.Get("token")), []byte(d.token)) == 1 {
				http.SetCookie(w, &http.Cookie{Name: cookie, Value: d.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			}
			q.Del("token")
			r.URL.RawQuery = q.Encode()
			http.Redirect(w, r, localTarget(r.URL), http.StatusSeeOther)
			return
		}
		if c, err := r.Cookie(cookie); err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(d.token)) != 1 {
			http.Error(w, "open the address kubectl berth dashboard printed: it holds this dashboard's token", http.StatusUnauthorized)
			return
		}
		d.pages.ServeHTTP(w, r)
	})
}

// localTarget is u's path and query as the target of a redirect on this
// host. A path that begins with two slashes, or a slash and a backslash,
// would name another host to the browser (//evil.example/): it starts with
// one slash instead.
func localTarget(u *url.URL) string {
	target := "/" + strings.TrimLeft(u.EscapedPath(), `/\`)
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	return target
}

func (o *options) dashboardCommand() *cobra.Command {
	port := 0
	cmd := &cobra.Command{
		Use:   "dashboard [--port N]",
		Short: "Serve a live page of the queues on 127.0.0.1, read with your credentials",
		Long: `Serve a live web page on 127.0.0.1: the cohorts and ClusterQueues with their quota bars,
each queue's waiting workloads in order with why they wait, and admissions, preemptions
and evictions as they happen. It watches the cluster with your credentials and writes
nothing. Port 0 picks a free one.`,
		Example: `  # Then open http://127.0.0.1:8090/
  kubectl berth dashboard
  kubectl berth dashboard --port 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return o.serveDashboard(ctx, port)
		},
	}
	cmd.Flags().IntVar(&port, "port", 8090, "The port on 127.0.0.1 to serve the page on; 0 picks a free one.")
	return cmd
}

func (o *options) serveDashboard(ctx context.Context, port int) error {
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer func() { _ = listener.Close() }()
	port = listener.Addr().(*net.TCPAddr).Port
	_, _ = fmt.Fprintln(o.streams.ErrOut, "Reading the cluster…")
	src, err := o.watch(ctx)
	if err != nil {
		return err
	}
	raw, err := o.flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return err
	}
	kubeContext := raw.CurrentContext
	if o.flags.Context != nil && *o.flags.Context != "" {
		kubeContext = *o.flags.Context
	}
	d, err := newDashboard(src, kubeContext, port)
	if err != nil {
		return err
	}
	// Requests end with ctx, so that the event streams let the server
	// shut down.
	server := &http.Server{Handler: d.handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	_, _ = fmt.Fprintf(o.streams.Out, "Berth dashboard: http://127.0.0.1:%d/?token=%s (Ctrl-C to stop)\n", port, d.token)
	if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
