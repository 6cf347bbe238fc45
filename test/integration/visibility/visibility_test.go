package visibility

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	visibilityv1alpha1 "github.com/berth-dev/berth/apis/visibility/v1alpha1"
	"github.com/berth-dev/berth/pkg/kubectlberth"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/test/util/apiserver"
)

const prefix = "/apis/visibility.berth.dev/v1alpha1/"

// get reads path through the API server as cfg's user.
func get(ctx context.Context, cfg *rest.Config, path string) (*visibilityv1alpha1.PendingWorkloadsSummary, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	path, query, _ := strings.Cut(path, "?")
	req := dc.RESTClient().Get().AbsPath(prefix + path)
	for _, kv := range strings.Split(query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			req = req.Param(k, v)
		}
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := &visibilityv1alpha1.PendingWorkloadsSummary{}
	return out, json.Unmarshal(raw, out)
}

func as(user string) *rest.Config {
	cfg := rest.CopyConfig(server.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return cfg
}

type place struct {
	Name   string
	CQ, LQ int32
}

func places(s *visibilityv1alpha1.PendingWorkloadsSummary) []place {
	out := []place{}
	for _, it := range s.Items {
		out = append(out, place{it.Namespace + "/" + it.Name, it.PositionInClusterQueue, it.PositionInLocalQueue})
	}
	return out
}

// queues creates a ClusterQueue with no room and six workloads waiting in
// it, by priority from two namespaces' LocalQueues: team-a/a0, team-b/b0,
// team-a/a1, team-b/b1, team-a/a2, team-b/b2.
func queues(ctx context.Context, t *testing.T) {
	objs := []client.Object{
		utiltesting.MakeResourceFlavor("default"),
		utiltesting.MakeClusterQueue("gpu").ResourceGroup(utiltesting.MakeFlavorQuotas("default").Resource("cpu", "0").Obj()).Obj(),
	}
	for _, ns := range []string{"team-a", "team-b"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, utiltesting.MakeLocalQueue("main", ns, "gpu"))
	}
	for i := range 6 {
		ns, name := "team-a", fmt.Sprint("a", i/2)
		if i%2 == 1 {
			ns, name = "team-b", fmt.Sprint("b", i/2)
		}
		objs = append(objs, utiltesting.MakeWorkload(name, ns).Queue("main").Priority(int32(60-10*i)).Request(1, "cpu", "1").Obj())
	}
	for _, obj := range objs {
		if err := server.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	// alice edits team-a: berth-batch-user, as the built-in edit role
	// aggregates it.
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "team-a"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "berth-batch-user"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}
	if err := server.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
}

func eventually(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func TestPendingWorkloadsThroughTheAPIServer(t *testing.T) {
	ctx := testContext(t)
	queues(ctx, t)
	all := []place{{"team-a/a0", 1, 1}, {"team-b/b0", 2, 1}, {"team-a/a1", 3, 2}, {"team-b/b1", 4, 2}, {"team-a/a2", 5, 3}, {"team-b/b2", 6, 3}}
	// The APIService becomes available once the controller has written
	// its CA into it and its EndpointSlice, and the queues fill.
	eventually(ctx, t, "an administrator reads the ClusterQueue", func() error {
		s, err := get(ctx, server.Config, "clusterqueues/gpu/pendingworkloads")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(all, places(s)); diff != "" {
			return fmt.Errorf("positions (-want +got):\n%s", diff)
		}
		for _, it := range s.Items {
			if it.Message == "" {
				return fmt.Errorf("%s waits with the message %q, which does not say why", it.Name, it.Message)
			}
		}
		return nil
	})
	s, err := get(ctx, server.Config, "clusterqueues/gpu/pendingworkloads?offset=4&limit=1")
	if err != nil || len(s.Items) != 1 || s.Items[0].Name != "a2" || s.PendingInClusterQueue != 6 {
		t.Fatalf("a page: %+v, %v", s, err)
	}

	// alice reads her own LocalQueue's, with its places in the
	// ClusterQueue, and team-b's only as a count.
	s, err = get(ctx, as("alice"), "namespaces/team-a/localqueues/main/pendingworkloads")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]place{all[0], all[2], all[4]}, places(s)); diff != "" {
		t.Errorf("alice's LocalQueue (-want +got):\n%s", diff)
	}
	if s.PendingInClusterQueue != 6 || s.PendingInLocalQueue != 3 || s.ClusterQueue != "gpu" {
		t.Errorf("counts: %d in %s, %d in the LocalQueue", s.PendingInClusterQueue, s.ClusterQueue, s.PendingInLocalQueue)
	}
	for _, path := range []string{"namespaces/team-b/localqueues/main/pendingworkloads", "clusterqueues/gpu/pendingworkloads"} {
		if _, err := get(ctx, as("alice"), path); !apierrors.IsForbidden(err) {
			t.Errorf("alice reads %s: %v, want forbidden", path, err)
		}
	}
	if _, err := get(ctx, server.Config, "namespaces/team-a/localqueues/nope/pendingworkloads"); !apierrors.IsNotFound(err) {
		t.Errorf("an unknown LocalQueue: %v, want not found", err)
	}
	pluginReadsTheAPI(ctx, t)
}

// pluginReadsTheAPI: kubectl berth, as alice, who may not read team-b's
// Workloads, shows her places in the ClusterQueue (without the API it
// cannot know them) and counts what is ahead of her elsewhere.
func pluginReadsTheAPI(ctx context.Context, t *testing.T) {
	out := plugin(ctx, t, "positions", "localqueue", "main", "-n", "team-a", "--as", "alice", "-o", "json")
	var list kubectlberth.PositionList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got []string
	for _, p := range list.Items {
		cq := "?"
		if p.PositionInClusterQueue != nil {
			cq = fmt.Sprint(*p.PositionInClusterQueue)
		}
		got = append(got, fmt.Sprintf("%s %s/%d", p.Name, cq, p.PositionInLocalQueue))
	}
	if diff := cmp.Diff([]string{"a0 1/1", "a1 3/2", "a2 5/3"}, got); diff != "" {
		t.Errorf("kubectl berth positions (-want +got):\n%s", diff)
	}
	out = plugin(ctx, t, "why", "workload/a2", "-n", "team-a", "--as", "alice", "-o", "json")
	var why kubectlberth.Why
	if err := json.Unmarshal([]byte(out), &why); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if why.PositionInClusterQueue == nil || *why.PositionInClusterQueue != 5 || why.AheadElsewhere != 2 || len(why.Ahead) != 2 {
		t.Errorf("kubectl berth why: %s", out)
	}
}

func plugin(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := kubectlberth.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", server.Kubeconfig}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("kubectl berth %v: %v: %s", args, err, errOut.String())
	}
	return out.String()
}

// TestOnlyTheAPIServerIsLetIn calls the controller's server directly, as
// anything in the cluster's network could: without the API server's
// front-proxy certificate, a request naming any user is refused.
func TestOnlyTheAPIServerIsLetIn(t *testing.T) {
	ctx := testContext(t)
	intruder, err := frontProxy.ClientCertificate("intruder")
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := frontProxy.ClientCertificate(apiserver.FrontProxyName)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cert *tls.Certificate
		want int
	}{
		"no client certificate":                        {want: http.StatusUnauthorized},
		"signed by the front-proxy CA, another name":   {cert: &intruder, want: http.StatusUnauthorized},
		"the API server's own front-proxy certificate": {cert: &proxy, want: http.StatusNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: direct(tc.cert)}, Timeout: 10 * time.Second}
			eventually(ctx, t, "calling the server", func() error {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+served+prefix+"clusterqueues/no-such-queue/pendingworkloads", nil)
				if err != nil {
					return err
				}
				req.Header.Set("X-Remote-User", "system:admin")
				req.Header.Set("X-Remote-Group", "system:masters")
				resp, err := c.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != tc.want {
					return fmt.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
				}
				return nil
			})
		})
	}
}
