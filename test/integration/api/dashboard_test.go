package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/berth-dev/berth/pkg/kubectlberth"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// browser is a dashboard's address and a client that opened the address
// the command printed, and so holds its token.
type browser struct {
	url string
	*http.Client
}

// dashboard serves kubectl berth dashboard against the suite's API server
// as user (the administrator when empty) until the test ends.
func dashboard(t *testing.T, user string, args ...string) browser {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	cmd := kubectlberth.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: w, ErrOut: io.Discard})
	flags := []string{"dashboard", "--port", "0", "--kubeconfig", server.Kubeconfig}
	if user != "" {
		flags = append(flags, "--as", user)
	}
	cmd.SetArgs(append(flags, args...))
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(ctx)
		_ = w.CloseWithError(fmt.Errorf("the dashboard stopped: %v", err))
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the dashboard of %q: %v", user, err)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	_, url, ok := strings.Cut(line, "Berth dashboard: ")
	if !ok {
		t.Fatalf("the dashboard says %q", line)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := browser{Client: &http.Client{Jar: jar}}
	resp, err := b.Get(strings.Fields(url)[0])
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	b.url = resp.Request.URL.String()
	return b
}

func (b browser) page(t *testing.T, path string) string {
	t.Helper()
	url := b.url + path
	resp, err := b.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v\n%s", url, resp.StatusCode, err, body)
	}
	return string(body)
}

// TestDashboardWatchesWithTheUsersRights: the dashboard watches what its
// user may read, with the user's credentials: the administrator sees the
// ClusterQueue, alice (berth-batch-user in one namespace) her LocalQueue
// and her positions. A new workload reaches both pages as an event on the
// stream, and the page then shows it.
func TestDashboardWatchesWithTheUsersRights(t *testing.T) {
	ctx := testContext(t)
	ns := "dashboard-team"
	aliceIn(ctx, t, ns, "dashboard-cq")
	if err := create(ctx, t, utiltesting.MakeWorkload("first", ns).Queue("main").Request(1, "cpu", "1").Obj()); err != nil {
		t.Fatal(err)
	}
	admin, alice := dashboard(t, ""), dashboard(t, "alice", "-n", ns)
	if _, err := berth(t, "alice", "dashboard", "--port", "0"); err == nil || !strings.Contains(err.Error(), "not allowed to list LocalQueues in every namespace, nor in namespace default") {
		t.Errorf("alice's dashboard of namespace default: %v, want a refusal that names it", err)
	}
	if body := admin.page(t, "queue?name=dashboard-cq&fragment=1"); !strings.Contains(body, `data-workload="dashboard-team/first"><td class="num position">1</td>`) {
		t.Errorf("the administrator's queue page:\n%s", body)
	}
	body := alice.page(t, "?fragment=1")
	for _, want := range []string{"You may not read ClusterQueues", `<td>dashboard-team/main</td><td><a href="queue?name=dashboard-cq">dashboard-cq</a></td><td class="num">1</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("alice's overview lacks %q:\n%s", want, body)
		}
	}

	streams := map[string]*bufio.Scanner{}
	for who, b := range map[string]browser{"admin": admin, "alice": alice} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"updates", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		streams[who] = bufio.NewScanner(resp.Body)
	}
	if err := create(ctx, t, utiltesting.MakeWorkload("second", ns).Queue("main").Request(1, "cpu", "1").Obj()); err != nil {
		t.Fatal(err)
	}
	for who, lines := range streams {
		told := false
		for !told && lines.Scan() {
			told = lines.Text() == "data: changed"
		}
		if !told {
			t.Fatalf("%s's stream ended untold: %v", who, lines.Err())
		}
	}
	if body := admin.page(t, "queue?name=dashboard-cq&fragment=1"); !strings.Contains(body, `data-workload="dashboard-team/second"><td class="num position">2</td>`) {
		t.Errorf("the administrator's queue page after the change:\n%s", body)
	}
	if body := alice.page(t, "?fragment=1"); !strings.Contains(body, `<td>dashboard-team/main</td><td><a href="queue?name=dashboard-cq">dashboard-cq</a></td><td class="num">2</td>`) {
		t.Errorf("alice's overview after the change:\n%s", body)
	}
}
