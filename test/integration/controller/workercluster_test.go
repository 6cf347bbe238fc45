package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/test/util/apiserver"
)

// TestWorkerClusterActive runs a second API server as a worker cluster.
// Its WorkerCluster, whose kubeconfig is in a Secret of Berth's namespace,
// is Active; one whose Secret does not exist, or holds no usable
// kubeconfig, is not and says why; once the worker's API server stops,
// its WorkerCluster is no longer Active, within the check interval. The
// controller reads the Secrets with its own role's permissions.
func TestWorkerClusterActive(t *testing.T) {
	withManager(t, func(o *controllermanager.Options) { o.MultiCluster.CheckInterval = time.Second })
	worker, err := apiserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = worker.Stop()
		}
	})
	kubeconfig, err := os.ReadFile(worker.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	secret := func(name string, data map[string][]byte) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "berth-system"}, Data: data}
		if err := server.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = server.Client.Delete(context.Background(), s) })
	}
	workerCluster := func(name, secretName string) {
		wc := &berthv1alpha1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: berthv1alpha1.WorkerClusterSpec{KubeConfig: berthv1alpha1.KubeConfig{Location: secretName}}}
		if err := server.Client.Create(ctx, wc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = server.Client.Delete(context.Background(), wc) })
	}
	active := func(name string, status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		waitFor(t, fmt.Sprintf("WorkerCluster %s Active=%s (%s)", name, status, reason), func(ctx context.Context) error {
			wc := &berthv1alpha1.WorkerCluster{}
			if err := server.Client.Get(ctx, client.ObjectKey{Name: name}, wc); err != nil {
				return err
			}
			c := meta.FindStatusCondition(wc.Status.Conditions, berthv1alpha1.ConditionActive)
			if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
				return fmt.Errorf("conditions %+v", wc.Status.Conditions)
			}
			return nil
		})
	}

	secret("worker-1", map[string][]byte{berthv1alpha1.WorkerClusterKubeConfigKey: kubeconfig})
	secret("no-key", map[string][]byte{"config": kubeconfig})
	secret("garbage", map[string][]byte{berthv1alpha1.WorkerClusterKubeConfigKey: []byte("not: [a kubeconfig")})
	workerCluster("worker-1", "worker-1")
	workerCluster("no-secret", "absent")
	workerCluster("no-key", "no-key")
	workerCluster("garbage", "garbage")

	active("worker-1", metav1.ConditionTrue, berthv1alpha1.ReasonWorkerReachable, "answers, Kubernetes "+worker.Version)
	active("no-secret", metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing, "Secret berth-system/absent, named by spec.kubeConfig.location, does not exist")
	active("no-key", metav1.ConditionFalse, berthv1alpha1.ReasonWorkerSecretMissing, "has no key kubeconfig")
	active("garbage", metav1.ConditionFalse, berthv1alpha1.ReasonWorkerBadKubeConfig, "cannot be used")

	stopped = true
	if err := worker.Stop(); err != nil {
		t.Fatal(err)
	}
	active("worker-1", metav1.ConditionFalse, berthv1alpha1.ReasonWorkerUnreachable, "does not answer")
}
