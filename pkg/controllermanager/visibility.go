package controllermanager

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/visibility"
)

// The leader points the visibility Service at itself (visibility.Advertiser).
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;create;update;delete,namespace=berth-system

// VisibilityOptions turn the visibility API on.
type VisibilityOptions struct {
	// BindAddress is where the Server listens.
	BindAddress string
	// Namespace and Service name the Service the APIService names.
	Namespace, Service string
	// AdvertiseAddress is the leader's address in the Service's
	// EndpointSlice (visibility.AdvertiseAddress of the configuration's).
	AdvertiseAddress net.IP
	// GetCertificate serves pkg/certs' certificate; nil reads tls.crt and
	// tls.key from CertDir (certificates managed by another tool).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	CertDir        string
}

// setupVisibility adds the visibility API's server, on every replica, and
// the advertiser of the leader, reading the pending workloads from queues.
func setupVisibility(mgr ctrl.Manager, queues *queue.Manager, opts VisibilityOptions) error {
	_, portText, err := net.SplitHostPort(opts.BindAddress)
	if err != nil {
		return fmt.Errorf("visibility.bindAddress: %w", err)
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return fmt.Errorf("visibility.bindAddress: %w", err)
	}
	getCert := opts.GetCertificate
	if getCert == nil {
		w, err := certwatcher.New(filepath.Join(opts.CertDir, "tls.crt"), filepath.Join(opts.CertDir, "tls.key"))
		if err != nil {
			return fmt.Errorf("the visibility API's certificate: %w", err)
		}
		if err := mgr.Add(w); err != nil {
			return err
		}
		getCert = w.GetCertificate
	}
	core, err := corev1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	elected := mgr.Elected()
	leads := func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}
	c := mgr.GetClient()
	localQueueOf := func(ctx context.Context, ns, name string) (berthv1alpha1.ClusterQueueReference, error) {
		lq := &berthv1alpha1.LocalQueue{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lq, client.UnsafeDisableDeepCopy); err != nil {
			return "", err
		}
		return lq.Spec.ClusterQueue, nil
	}
	feed := dashboard.NewFeed()
	dash, err := visibility.NewDashboard(mgr.GetCache(), feed)
	if err != nil {
		return err
	}
	if err := mgr.Add(everyReplica(func(ctx context.Context) error { return followForDashboard(ctx, mgr.GetCache(), feed) })); err != nil {
		return err
	}
	if err := mgr.Add(&visibility.Server{
		Addr: opts.BindAddress, Handler: visibility.NewHandler(queues, localQueueOf, leads, dash), Kube: coreOnly{core: core}, GetCertificate: getCert,
	}); err != nil {
		return err
	}
	return mgr.Add(&visibility.Advertiser{
		Client: c, Reader: mgr.GetAPIReader(), Namespace: opts.Namespace, Service: opts.Service,
		Address: opts.AdvertiseAddress, Port: int32(port),
	})
}

// followForDashboard has feed hear the informers of what the dashboard
// shows, and tells its pages of the changes until ctx ends. It runs on
// every replica: the cache is every replica's.
func followForDashboard(ctx context.Context, informers cache.Informers, feed *dashboard.Feed) error {
	for _, obj := range []client.Object{
		&berthv1alpha1.ClusterQueue{}, &berthv1alpha1.LocalQueue{}, &berthv1alpha1.Cohort{},
		&berthv1alpha1.ResourceFlavor{}, &berthv1alpha1.Workload{},
	} {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(feed.Handler(obj)); err != nil {
			return err
		}
	}
	feed.Run(ctx)
	return nil
}

// everyReplica is a runnable that runs whether or not the replica leads.
type everyReplica func(context.Context) error

// Start runs it.
func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false.
func (f everyReplica) NeedLeaderElection() bool { return false }

// coreOnly is a kubernetes.Interface with the core API group only, all
// that the front-proxy configuration's readers use (its ConfigMap). A
// whole clientset handed over as the interface would keep every API
// group's client in the binary (7.7 MB of it), since the linker cannot
// tell which methods an interface's users call. The embedded interface is
// nil and never called.
type coreOnly struct {
	kubernetes.Interface
	core corev1client.CoreV1Interface
}

// CoreV1 is the core group's client.
func (c coreOnly) CoreV1() corev1client.CoreV1Interface { return c.core }
