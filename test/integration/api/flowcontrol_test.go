package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLeaderElectionPriority installs the FlowSchemas of config/default and
// config/scheduler and asks the API server itself, by the priority level
// it names in its response headers, how it classifies each component's
// requests: its Lease requests into the leader-election level, where
// kube-controller-manager's and kube-scheduler's go, and its other
// requests elsewhere.
func TestLeaderElectionPriority(t *testing.T) {
	ctx := testContext(t)
	var level flowcontrolv1.PriorityLevelConfiguration
	if err := server.Client.Get(ctx, client.ObjectKey{Name: "leader-election"}, &level); err != nil {
		t.Fatalf("the API server's suggested leader-election priority level: %v", err)
	}
	for _, tc := range []struct{ dir, deployment, lease string }{
		{dir: "default", deployment: "berth-controller", lease: "berth.dev"},
		{dir: "scheduler", deployment: "berth-scheduler", lease: "berth-scheduler"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			_, in := renderInstall(ctx, t, tc.dir)
			var deploy appsv1.Deployment
			in.get(t, "Deployment", tc.deployment, &deploy)
			schemas := 0
			for _, obj := range in {
				if obj.GetKind() == "FlowSchema" {
					schemas++
					if err := create(ctx, t, obj); err != nil {
						t.Fatal(err)
					}
				}
			}
			if schemas == 0 {
				t.Fatalf("config/%s installs no FlowSchema", tc.dir)
			}
			// The user name the API server gives a service account.
			user := fmt.Sprintf("system:serviceaccount:%s:%s", deploy.Namespace, deploy.Spec.Template.Spec.ServiceAccountName)
			lease := fmt.Sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", deploy.Namespace, tc.lease)
			// The API server takes a moment to apply a new FlowSchema.
			var got string
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
				var err error
				got, err = priorityLevelOf(ctx, user, lease)
				return got == string(level.UID), err
			})
			if err != nil {
				t.Fatalf("%s's GET of its Lease went to priority level %q, want leader-election (%s): %v", user, got, level.UID, err)
			}
			other, err := priorityLevelOf(ctx, user, fmt.Sprintf("/apis/berth.dev/v1alpha1/namespaces/%s/workloads", deploy.Namespace))
			if err != nil || other == "" || other == string(level.UID) {
				t.Errorf("%s's list of Workloads went to priority level %q (%v); want one other than leader-election", user, other, err)
			}
		})
	}
}

// priorityLevelOf sends a GET of path as user and returns the UID of the
// priority level the API server put it in.
func priorityLevelOf(ctx context.Context, user, path string) (string, error) {
	cfg := rest.CopyConfig(server.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID), nil
}
