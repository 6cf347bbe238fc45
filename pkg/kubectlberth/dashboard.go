package kubectlberth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

//go:embed web
var web embed.FS

// source is what the dashboard shows: the cluster as its watches last saw
// it, and what happened since it started.
type source interface {
	// snapshot is the cluster now and the happenings, newest first.
	snapshot(ctx context.Context) (*cluster, []happening, error)
	// subscribe is told when something changed, at most a few times a
	// second; cancel ends the subscription.
	subscribe() (changed <-chan struct{}, cancel func())
}

// dashboard serves the pages of kubectl berth dashboard.
type dashboard struct {
	src     source
	context string
	pages   *template.Template
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

// page is what the layout renders: the page's title and data, and the
// template (Name) that renders the data.
type page struct {
	Title, Context, Name string
	Data                 any
}

// pagerLinks number pages and link to their neighbours, keeping the page's
// other query parameters.
type pagerLinks struct {
	Page, Pages int
	Prev, Next  string
}

func pager(page, pages int, params ...string) pagerLinks {
	link := func(p int) string {
		q := url.Values{}
		for i := 0; i+1 < len(params); i += 2 {
			q.Set(params[i], params[i+1])
		}
		q.Set("page", strconv.Itoa(p))
		return "?" + q.Encode()
	}
	out := pagerLinks{Page: page, Pages: pages}
	if page > 1 {
		out.Prev = link(page - 1)
	}
	if page < pages {
		out.Next = link(page + 1)
	}
	return out
}

func newDashboard(src source, kubeContext string, port int) (*dashboard, error) {
	pages, err := template.New("").Funcs(template.FuncMap{"pager": pager}).ParseFS(web, "web/*.html")
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
	return &dashboard{src: src, context: kubeContext, pages: pages, hosts: hosts, token: hex.EncodeToString(token)}, nil
}

func (d *dashboard) handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(web, "web")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /updates", d.updates)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		d.render(w, r, func(cl *cluster, feed []happening) page {
			return page{Title: "queues", Name: "overview", Data: buildOverview(cl, feed)}
		})
	})
	mux.HandleFunc("GET /cohort", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		d.render(w, r, func(cl *cluster, _ []happening) page {
			cv, _ := buildCohortPage(cl, name, pageNumber(r))
			return page{Title: "cohort " + name, Name: "cohort", Data: cv}
		})
	})
	mux.HandleFunc("GET /cq/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		d.render(w, r, func(cl *cluster, feed []happening) page {
			return page{Title: name, Name: "queue", Data: buildQueuePage(cl, name, pageNumber(r), feed)}
		})
	})
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
		mux.ServeHTTP(w, r)
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

func pageNumber(r *http.Request) int {
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	return n
}

// render writes a page, or with ?fragment=1 only its content, which the
// page's script swaps in when the cluster changes.
func (d *dashboard) render(w http.ResponseWriter, r *http.Request, build func(*cluster, []happening) page) {
	cl, feed, err := d.src.snapshot(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	p := build(cl, feed)
	p.Context = d.context
	name := "layout"
	if r.URL.Query().Get("fragment") != "" {
		name = "content"
	}
	var b bytes.Buffer
	if err := d.pages.ExecuteTemplate(&b, name, p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// updates is a stream of server-sent events, one each time the cluster
// changed.
func (d *dashboard) updates(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	changed, cancel := d.src.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	// A comment now and then keeps idle connections open through proxies.
	keepAlive := time.NewTicker(25 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			_, _ = fmt.Fprint(w, ": idle\n\n")
		case <-changed:
			_, _ = fmt.Fprint(w, "data: changed\n\n")
		}
		flusher.Flush()
	}
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
