package kubectlberth

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// still is a source that shows one cluster and is told of changes by the
// test.
type still struct {
	cl      *dashboard.Cluster
	feed    []dashboard.Happening
	changes chan struct{}
}

func (s *still) Snapshot(context.Context) (*dashboard.Cluster, []dashboard.Happening, error) {
	return s.cl, s.feed, nil
}

func (s *still) Subscribe() (<-chan struct{}, func()) { return s.changes, func() {} }

// served is a dashboard on a test server, and a browser that opened the
// address the command prints, and so holds its token.
type served struct {
	URL     string
	token   string
	browser *http.Client
}

// testDashboard serves the dashboard of src on a test server.
func testDashboard(t testing.TB, src *still) served {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	d, err := newDashboard(src, "kind-berth", srv.Listener.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = d.handler()
	srv.Start()
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := served{URL: srv.URL, token: d.token, browser: &http.Client{Jar: jar}}
	resp, err := s.browser.Get(srv.URL + "/?token=" + d.token)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.RawQuery != "" {
		t.Fatalf("opening the address: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	return s
}

func loadTestCluster(t *testing.T) *dashboard.Cluster {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	objs := testCluster(t, false)
	for _, o := range objs {
		// team-a borrows 2 of team-b's GPUs.
		if cq, ok := o.(*berthv1alpha1.ClusterQueue); ok && cq.Name == "team-a" {
			cq.Status.FlavorsUsage[0].Resources[0] = berthv1alpha1.ResourceUsage{Name: "nvidia.com/gpu", Total: resource.MustParse("10"), Borrowed: resource.MustParse("2")}
		}
	}
	cl, err := dashboard.Load(t.Context(), fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	cl.Now = utiltesting.BaseTime
	return cl
}

func (s served) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := s.browser.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestDashboardPages(t *testing.T) {
	feed := []dashboard.Happening{
		{At: utiltesting.BaseTime, Kind: "admitted", Namespace: "a", Name: "running", CQ: "team-a", Detail: "h100"},
		{At: utiltesting.BaseTime, Kind: "preempted", Namespace: "b", Name: "low", CQ: "team-b", Detail: "Preempted to reclaim quota"},
	}
	srv := testDashboard(t, &still{cl: loadTestCluster(t), feed: feed})
	for _, tc := range []struct {
		name, path string
		want       []string
	}{{
		name: "dashboard-overview",
		path: "/?fragment=1",
		want: []string{
			// Three wait in team-a (the deactivated one does not), one holds quota.
			`data-queue="team-a">\s*<td><a href="queue\?name=team-a">team-a</a></td>\s*<td class="num pending">3</td><td class="num admitted">1</td>`,
			// team-a borrows 2 of its 10; team-b lends them.
			`10 of 8, borrowed 2`, `0 of 8, lent 2`,
			`<td class="kind">preempted</td><td>b/low</td>`,
		},
	}, {
		name: "dashboard-queue",
		path: "/queue?name=team-a&fragment=1",
		want: []string{
			`data-workload="a/urgent"><td class="num position">1</td>`,
			`data-workload="a/first"><td class="num position">2</td>`,
			`needs 4 nvidia.com/gpu, 2 available \(nominal 8, in use 6\)`,
			`data-workload="a/running"><td>a/running</td>`,
			`<td class="kind">admitted</td><td>a/running</td>`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := srv.get(t, tc.path)
			if code != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.path, code, body)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(body) {
					t.Errorf("%s lacks %s", tc.path, w)
				}
			}
			if strings.Contains(body, "b/low</td><td><a href=\"queue?name=team-b\">") && tc.name == "dashboard-queue" {
				t.Errorf("the queue page shows another queue's happening")
			}
			compareGolden(t, tc.name, body)
		})
	}
	t.Run("whole-page", func(t *testing.T) {
		_, body := srv.get(t, "/")
		for _, w := range []string{`<script src="berth.js">`, `<span class="muted">kind-berth</span>`, `<main id="content">`} {
			if !strings.Contains(body, w) {
				t.Errorf("the page lacks %s", w)
			}
		}
		if code, js := srv.get(t, "/berth.js"); code != http.StatusOK || !strings.Contains(js, "EventSource") {
			t.Errorf("berth.js: %d", code)
		}
	})
	t.Run("unknown-queue", func(t *testing.T) {
		_, body := srv.get(t, "/queue?name=nope&fragment=1")
		if !strings.Contains(body, "ClusterQueue nope does not exist") {
			t.Error(body)
		}
	})
}

// TestDashboardFoldsAndPages checks that a large cluster stays a page:
// cohorts fold to a line each, a cohort's and a queue's lists come a page
// at a time, with links to the next.
func TestDashboardFoldsAndPages(t *testing.T) {
	cl := benchCluster(1000, 50000)
	// cq-0001 has 50 workloads waiting; 49 more go to it.
	for i := range 49 {
		cl.Workloads = append(cl.Workloads, utiltesting.MakeWorkload(fmt.Sprintf("more-%d", i), "ns-0001").Queue("main").Request(1, "nvidia.com/gpu", "1").Obj())
	}
	srv := testDashboard(t, &still{cl: cl})
	_, body := srv.get(t, "/?fragment=1")
	if n := strings.Count(body, `class="queue"`); n != 0 {
		t.Errorf("the folded overview shows %d queues", n)
	}
	if n := strings.Count(body, `class="cohort"`); n != 100 {
		t.Errorf("the overview shows %d cohorts, want 100", n)
	}
	if !strings.Contains(body, `<a href="cohort?name=cohort-7">cohort-7</a>`) {
		t.Error("no link to a cohort's page")
	}
	_, body = srv.get(t, "/cohort?name=cohort-7&fragment=1")
	if n := strings.Count(body, `class="queue"`); n != 10 {
		t.Errorf("cohort-7's page shows %d queues, want 10", n)
	}
	_, body = srv.get(t, "/queue?name=cq-0001&page=2&fragment=1")
	if n := strings.Count(body, `class="pending-workload"`); n != 49 {
		t.Errorf("page 2 of cq-0001 shows %d workloads, want 49", n)
	}
	if !strings.Contains(body, `class="num position">51</td>`) || !strings.Contains(body, `<a href="?name=cq-0001&amp;page=1">previous</a>`) {
		t.Errorf("page 2 does not go on from 51 or link back:\n%s", body)
	}
}

// TestDashboardRefusesStrangers: a page of another site (through DNS
// rebinding) and a client without the token get nothing.
func TestDashboardRefusesStrangers(t *testing.T) {
	srv := testDashboard(t, &still{cl: benchCluster(1, 0)})
	for _, tc := range []struct {
		name, host, path string
		client           *http.Client
		want             int
	}{
		{"another host, with the cookie", "attacker.example:80", "/", srv.browser, http.StatusForbidden},
		{"no token", "", "/", http.DefaultClient, http.StatusUnauthorized},
		{"no token, the stream", "", "/updates", http.DefaultClient, http.StatusUnauthorized},
		{"a wrong token", "", "/?token=x" + srv.token[1:], &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, http.StatusSeeOther},
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := tc.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want || len(resp.Cookies()) > 0 {
			t.Errorf("%s: %d, cookies %v; want %d and none", tc.name, resp.StatusCode, resp.Cookies(), tc.want)
		}
	}
}

// TestDashboardRedirectsOnlyToItself: the redirect that takes the token
// out of the address never names another host, whatever the path. The
// request lines are written by hand: a client would read //host/ as a
// host, a browser's address bar sends it as a path.
func TestDashboardRedirectsOnlyToItself(t *testing.T) {
	srv := testDashboard(t, &still{cl: benchCluster(1, 0)})
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, path := range []string{"//evil.example/?token=", "/\\evil.example/?token=", "///evil.example?token=", "/queue?name=a&page=2&token="} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(conn, "GET %s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, srv.token, host); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		_ = conn.Close()
		loc := resp.Header.Get("Location")
		target, err := url.Parse(loc)
		if resp.StatusCode != http.StatusSeeOther || err != nil || target.Host != "" || !strings.HasPrefix(loc, "/") ||
			strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") || strings.Contains(loc, "token") {
			t.Errorf("%s: %d to %q; want a redirect to a path of this host without the token", path, resp.StatusCode, loc)
		}
	}
}

func TestDashboardStreamsChanges(t *testing.T) {
	src := &still{cl: benchCluster(1, 0), changes: make(chan struct{}, 1)}
	srv := testDashboard(t, src)
	resp, err := srv.browser.Get(srv.URL + "/updates")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	src.changes <- struct{}{}
	lines := bufio.NewScanner(resp.Body)
	deadline := time.AfterFunc(10*time.Second, func() { _ = resp.Body.Close() })
	defer deadline.Stop()
	for lines.Scan() {
		if lines.Text() == "data: changed" {
			return
		}
	}
	t.Fatalf("no event for the change: %v", lines.Err())
}

func TestHappenings(t *testing.T) {
	at := utiltesting.BaseTime
	pending := utiltesting.MakeWorkload("w", "a").Queue("main").Request(1, "nvidia.com/gpu", "1").Obj()
	admitted := utiltesting.MakeWorkload("w", "a").Queue("main").Request(1, "nvidia.com/gpu", "1").AdmittedIn("team-a", "h100").Obj()
	preempted := admitted.DeepCopy()
	preempted.Status.Conditions = append(preempted.Status.Conditions,
		metav1.Condition{Type: berthv1alpha1.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: berthv1alpha1.ReasonPreempted, Message: "Preempted to reclaim quota"},
		metav1.Condition{Type: berthv1alpha1.WorkloadPreempted, Status: metav1.ConditionTrue, Reason: "InCohortReclamation", Message: "Preempted to reclaim quota"})
	evicted := admitted.DeepCopy()
	evicted.Status.Conditions = append(evicted.Status.Conditions,
		metav1.Condition{Type: berthv1alpha1.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "PodsReadyTimeout", Message: "not ready in 5m"})
	for _, tc := range []struct {
		name     string
		old, cur *berthv1alpha1.Workload
		want     []dashboard.Happening
	}{
		{"admitted", pending, admitted, []dashboard.Happening{{At: at, Kind: "admitted", Namespace: "a", Name: "w", CQ: "team-a", Detail: "h100"}}},
		{"no change", admitted, admitted, nil},
		{"preempted, told once", admitted, preempted, []dashboard.Happening{{At: at, Kind: "preempted", Namespace: "a", Name: "w", CQ: "team-a", Detail: "Preempted to reclaim quota"}}},
		{"evicted", admitted, evicted, []dashboard.Happening{{At: at, Kind: "evicted", Namespace: "a", Name: "w", CQ: "team-a", Detail: "PodsReadyTimeout: not ready in 5m"}}},
	} {
		if diff := cmp.Diff(tc.want, dashboard.HappeningsOf(tc.old, tc.cur, at)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
