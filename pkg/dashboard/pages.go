package dashboard

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

//go:embed web
var web embed.FS

// Source is what the pages show: the cluster as its reader last saw it,
// and what happened lately.
type Source interface {
	// Snapshot is the cluster now and the happenings, newest first.
	Snapshot(ctx context.Context) (*Cluster, []Happening, error)
	// Subscribe is told when something changed, at most a few times a
	// second; cancel ends the subscription.
	Subscribe() (changed <-chan struct{}, cancel func())
}

// Pages serves the dashboard's pages from a Source. Every link in them is
// relative, so that they can be served under any path: at the root by
// kubectl berth dashboard, under the visibility API by the controller.
// The paths are flat (overview, queue?name=, cohort?name=, berth.css,
// berth.js, updates): under an aggregated API each is one resource name
// that the API server's RBAC can grant.
type Pages struct {
	pages *template.Template
}

// NewPages parses the templates.
func NewPages() (*Pages, error) {
	pages, err := template.New("").Funcs(template.FuncMap{"pager": pager}).ParseFS(web, "web/*.html")
	if err != nil {
		return nil, err
	}
	return &Pages{pages: pages}, nil
}

// Handler serves the pages of src at the root of its paths (mount it with
// http.StripPrefix), with label beside their title: the kubeconfig
// context, or whose view they are.
func (p *Pages) Handler(src Source, label string) http.Handler {
	v := view{Pages: p, src: src, label: label}
	mux := http.NewServeMux()
	static, _ := fs.Sub(web, "web")
	for _, file := range []string{"berth.css", "berth.js"} {
		mux.HandleFunc("GET /"+file, func(w http.ResponseWriter, r *http.Request) {
			http.ServeFileFS(w, r, static, file)
		})
	}
	mux.HandleFunc("GET /updates", v.updates)
	overview := func(w http.ResponseWriter, r *http.Request) {
		v.render(w, r, func(cl *Cluster, feed []Happening) page {
			return page{Title: "queues", Name: "overview", Data: buildOverview(cl, feed)}
		})
	}
	mux.HandleFunc("GET /{$}", overview)
	mux.HandleFunc("GET /overview", overview)
	mux.HandleFunc("GET /cohort", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		v.render(w, r, func(cl *Cluster, _ []Happening) page {
			cv, _ := buildCohortPage(cl, name, pageNumber(r))
			return page{Title: "cohort " + name, Name: "cohort", Data: cv}
		})
	})
	mux.HandleFunc("GET /queue", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		v.render(w, r, func(cl *Cluster, feed []Happening) page {
			return page{Title: name, Name: "queue", Data: buildQueuePage(cl, name, pageNumber(r), feed)}
		})
	})
	return mux
}

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

func pageNumber(r *http.Request) int {
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	return n
}

// view is the pages of one Source.
type view struct {
	*Pages
	src   Source
	label string
}

// render writes a page, or with ?fragment=1 only its content, which the
// page's script swaps in when the cluster changes.
func (v view) render(w http.ResponseWriter, r *http.Request, build func(*Cluster, []Happening) page) {
	cl, feed, err := v.src.Snapshot(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	pg := build(cl, feed)
	pg.Context = v.label
	name := "layout"
	if r.URL.Query().Get("fragment") != "" {
		name = "content"
	}
	var b bytes.Buffer
	if err := v.pages.ExecuteTemplate(&b, name, pg); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// updates is a stream of server-sent events, one each time the cluster
// changed.
func (v view) updates(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	changed, cancel := v.src.Subscribe()
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
