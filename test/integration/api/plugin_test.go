package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/pkg/kubectlberth"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
	"github.com/berth-dev/berth/test/util/apiserver"
)

// berth runs kubectl berth against the suite's API server as user, the
// administrator when empty.
func berth(t *testing.T, user string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := kubectlberth.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	flags := []string{"--kubeconfig", server.Kubeconfig}
	if user != "" {
		flags = append(flags, "--as", user)
	}
	cmd.SetArgs(append(flags, args...))
	err := cmd.ExecuteContext(apiserver.Context(t, time.Minute))
	return out.String(), err
}

// aliceIn makes namespace ns with a LocalQueue main of a new ClusterQueue
// cq (4 CPUs of a flavor of its own), and binds user alice to
// berth-batch-user there.
func aliceIn(ctx context.Context, t *testing.T, ns, cq string) {
	t.Helper()
	if _, stderr, err := server.Kubectl(ctx, "apply", "-f", filepath.Join(apiserver.RepoRoot(), "config", "rbac", "user_roles.yaml")); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	queue := utiltesting.MakeClusterQueue(cq).ResourceGroup(utiltesting.MakeFlavorQuotas(cq+"-flavor").Resource("cpu", "4").Obj()).Obj()
	queue.Spec.NamespaceSelector = &metav1.LabelSelector{}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		utiltesting.MakeResourceFlavor(cq + "-flavor"), queue, utiltesting.MakeLocalQueue("main", ns, cq),
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "berth-batch-user"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		},
	} {
		if err := create(ctx, t, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPluginWithAUsersOwnRights: a user bound to berth-batch-user in one
// namespace reads the positions in their LocalQueue, though not the
// ClusterQueue's, and is told plainly what they may not read; an admin
// reads both.
func TestPluginWithAUsersOwnRights(t *testing.T) {
	ctx := testContext(t)
	ns := "plugin-team"
	aliceIn(ctx, t, ns, "plugin-cq")
	for i, prio := range []int32{0, 10, 5} {
		wl := utiltesting.MakeWorkload(fmt.Sprintf("w%d", i), ns).Queue("main").Priority(prio).Request(1, "cpu", "1").Obj()
		if err := create(ctx, t, wl); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		user      string
		wantOrder []string
		wantCQ    bool
	}{
		{user: "alice", wantOrder: []string{"w1", "w2", "w0"}},
		{user: "", wantOrder: []string{"w1", "w2", "w0"}, wantCQ: true},
	} {
		out, err := berth(t, tc.user, "positions", "localqueue", "main", "-n", ns, "-o", "json")
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.user, err, out)
		}
		var list kubectlberth.PositionList
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		var order []string
		for i, p := range list.Items {
			order = append(order, p.Name)
			if p.PositionInLocalQueue != i+1 || (p.PositionInClusterQueue != nil) != tc.wantCQ {
				t.Errorf("%s: %+v at %d", tc.user, p, i)
			}
		}
		if strings.Join(order, ",") != strings.Join(tc.wantOrder, ",") {
			t.Errorf("%s: order %v, want %v", tc.user, order, tc.wantOrder)
		}
	}
	if _, err := berth(t, "alice", "usage", "-n", ns); err == nil || !strings.Contains(err.Error(), "not allowed to read ClusterQueues") {
		t.Errorf("usage as alice: %v, want a refusal", err)
	}
	// Her own workloads she stops and resumes, and changes nothing else.
	for _, verb := range []string{"stop", "resume"} {
		if out, err := berth(t, "alice", verb, "workload", "w0", "-n", ns); err != nil {
			t.Errorf("%s as alice: %v\n%s", verb, err, out)
		}
	}
	for _, patch := range []string{`{"spec":{"queueName":"other"}}`, `{"spec":{"priority":1000}}`, `{"spec":{"maximumExecutionTimeSeconds":99999}}`, `{"metadata":{"labels":{"berth.dev/job-uid":"x"}}}`} {
		if _, stderr, err := server.Kubectl(ctx, "--as", "alice", "patch", "workload", "w0", "-n", ns, "--type=merge", "-p", patch); err == nil || !strings.Contains(stderr, "a job's owner may") {
			t.Errorf("alice patching %s: %v %s, want a refusal", patch, err, stderr)
		}
	}
	if out, err := berth(t, "alice", "why", "workload/w0", "-n", ns, "-o", "json"); err != nil || !strings.Contains(out, `"positionInLocalQueue": 3`) {
		t.Errorf("why as alice: %v\n%s", err, out)
	}
}
