package visibility

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// page reads one of the dashboard's pages through the API server as
// cfg's user, as a browser does through kubectl proxy.
func page(ctx context.Context, cfg *rest.Config, path string) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	path, query, _ := strings.Cut(path, "?")
	req := dc.RESTClient().Get().AbsPath(prefix + path)
	if k, v, ok := strings.Cut(query, "="); ok {
		req = req.Param(k, v)
	}
	raw, err := req.DoRaw(ctx)
	return string(raw), err
}

// TestDashboardThroughTheAPIServer reads the dashboard the controller
// serves under the visibility API: a cluster reader sees every queue and
// workload; carol, berth-batch-user in team-c, sees team-c's pages only,
// and the API server refuses her the cluster's and team-d's.
func TestDashboardThroughTheAPIServer(t *testing.T) {
	ctx := testContext(t)
	objs := []client.Object{
		utiltesting.MakeResourceFlavor("dash"),
		utiltesting.MakeClusterQueue("dash").ResourceGroup(utiltesting.MakeFlavorQuotas("dash").Resource("cpu", "0").Obj()).Obj(),
	}
	for _, ns := range []string{"team-c", "team-d"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, utiltesting.MakeLocalQueue("main", ns, "dash"),
			utiltesting.MakeWorkload(ns[len(ns)-1:]+"0", ns).Queue("main").Request(1, "cpu", "1").Obj())
	}
	objs = append(objs, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "carol", Namespace: "team-c"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "berth-batch-user"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}},
	})
	for _, obj := range objs {
		if err := server.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	has := func(cfg *rest.Config, path string, want []string, not ...string) func() error {
		return func() error {
			body, err := page(ctx, cfg, path)
			if err != nil {
				return err
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					return fmt.Errorf("%s lacks %q:\n%s", path, w, body)
				}
			}
			for _, n := range not {
				if strings.Contains(body, n) {
					return fmt.Errorf("%s shows %q:\n%s", path, n, body)
				}
			}
			return nil
		}
	}
	eventually(ctx, t, "an administrator reads the overview", has(server.Config, "clusterdashboard/overview",
		[]string{`data-queue="dash"`, `<link rel="stylesheet" href="berth.css">`, "served by the Berth controller"}))
	eventually(ctx, t, "an administrator reads the queue's page", has(server.Config, "clusterdashboard/queue?name=dash",
		[]string{`data-workload="team-c/c0"`, `data-workload="team-d/d0"`}))
	eventually(ctx, t, "the page's script", has(server.Config, "clusterdashboard/berth.js", []string{"EventSource('updates')"}))

	// The live connection is told at once, through the API server.
	eventually(ctx, t, "the updates stream", func() error {
		dc, err := discovery.NewDiscoveryClientForConfig(server.Config)
		if err != nil {
			return err
		}
		stream, err := dc.RESTClient().Get().AbsPath(prefix + "clusterdashboard/updates").Stream(ctx)
		if err != nil {
			return err
		}
		defer stream.Close()
		first, err := bufio.NewReader(stream).ReadString('\n')
		if err != nil || first != "retry: 2000\n" {
			return fmt.Errorf("the stream began with %q: %v", first, err)
		}
		return nil
	})

	carol := as("carol")
	eventually(ctx, t, "carol reads team-c's overview", has(carol, "namespaces/team-c/dashboard/overview",
		[]string{"team-c/main", "You may not read ClusterQueues"}, "team-d"))
	eventually(ctx, t, "carol reads her workloads in the queue", has(carol, "namespaces/team-c/dashboard/queue?name=dash",
		[]string{`data-workload="team-c/c0"`}, "team-d"))
	// dave has view cluster-wide, as some organisations grant their
	// readers: every namespace's pages, not the ClusterQueues'.
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dave"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "berth-batch-viewer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dave"}},
	}
	if err := server.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	dave := as("dave")
	eventually(ctx, t, "dave reads team-d's overview", has(dave, "namespaces/team-d/dashboard/overview", []string{"team-d/main"}))
	if _, err := page(ctx, dave, "clusterdashboard/overview"); !apierrors.IsForbidden(err) {
		t.Errorf("dave, with view cluster-wide, reads the cluster's dashboard: %v, want Forbidden", err)
	}
	for _, path := range []string{"clusterdashboard/overview", "namespaces/team-d/dashboard/overview", "namespaces/team-d/dashboard/queue?name=dash"} {
		if _, err := page(ctx, carol, path); !apierrors.IsForbidden(err) {
			t.Errorf("carol reads %s: %v, want Forbidden from the API server", path, err)
		}
	}
}
