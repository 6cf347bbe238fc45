package visibility

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/certs"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/visibility"
	"github.com/berth-dev/berth/test/util/apiserver"
)

var (
	server     *apiserver.Server
	frontProxy *apiserver.FrontProxy
	// served is where the controller's visibility server listens.
	served string
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(apiserver.RunSuite(m, &server, startManager, apiserver.WithFrontProxy(&frontProxy)))
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	return apiserver.Context(t, 90*time.Second)
}

// startManager installs the visibility API as config/visibility does, and
// runs a controller manager with the controller's role, its certificate
// manager and the visibility server on a free port of this machine's
// address.
func startManager() (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	for _, args := range [][]string{
		{"create", "namespace", "berth-system"},
		{"apply", "-k", apiserver.RepoRoot() + "/config/visibility"},
		{"apply", "-f", apiserver.RepoRoot() + "/config/rbac/user_roles.yaml"},
	} {
		if _, stderr, err := server.Kubectl(ctx, args...); err != nil {
			cancel()
			return nil, fmt.Errorf("kubectl %v: %v: %s", args, err, stderr)
		}
	}
	cfg, err := server.ControllerConfig(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		cancel()
		return nil, err
	}
	if err := controllermanager.AddToScheme(scheme, nil); err != nil {
		cancel()
		return nil, err
	}
	cacheOpts, err := controllermanager.Deviations{}.CacheOptions(cfg, scheme, controllermanager.Scope{APIService: configv1alpha1.VisibilityAPIServiceName})
	if err != nil {
		cancel()
		return nil, err
	}
	dir, err := os.MkdirTemp("", "berth-visibility-")
	if err != nil {
		cancel()
		return nil, err
	}
	certsMgr := certs.New(certs.Options{
		ServiceName: "berth-webhook-service", ServiceNamespace: "berth-system", SecretName: "berth-webhook-server-cert",
		ExtraServiceNames: []string{configv1alpha1.DefaultVisibilityServiceName}, APIServiceName: configv1alpha1.VisibilityAPIServiceName,
		CertDir: dir,
	})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Cache: cacheOpts, MapperProvider: controllermanager.Deviations{}.MapperProvider(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		cancel()
		return nil, err
	}
	if err := certsMgr.SetupWithManager(mgr); err != nil {
		cancel()
		return nil, err
	}
	addr, err := visibility.AdvertiseAddress("")
	if err != nil {
		cancel()
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		cancel()
		return nil, err
	}
	served = net.JoinHostPort(addr.String(), fmt.Sprint(port))
	opts := controllermanager.Options{Visibility: &controllermanager.VisibilityOptions{
		BindAddress: fmt.Sprintf(":%d", port), Namespace: "berth-system", Service: configv1alpha1.DefaultVisibilityServiceName,
		AdvertiseAddress: addr, GetCertificate: certsMgr.GetCertificate,
	}}
	if err := controllermanager.Setup(ctx, mgr, opts); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return func() {
		cancel()
		<-done
		_ = os.RemoveAll(dir)
	}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// direct is a client that calls the controller's server itself, not
// through the API server, with cert as its client certificate (none when
// nil); it trusts any server certificate: what is tested is whom the
// server lets in.
func direct(cert *tls.Certificate) *tls.Config {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the server's identity is not what this checks
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return cfg
}
