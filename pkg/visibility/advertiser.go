package visibility

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// managedBy marks the EndpointSlice as Berth's, so that the EndpointSlice
// controller of a Service with no selector leaves it alone.
const managedBy = "visibility.berth.dev"

// Advertiser points the visibility Service at the leader: it writes the
// Service's EndpointSlice with this replica's address when the replica
// becomes leader, and again every minute, should someone remove it. The
// Service has no selector, so only the leader, whose queues are the
// scheduler's, is ever called; a controller that runs outside the cluster
// (the local cluster's) is reached the same way.
type Advertiser struct {
	// Client writes the EndpointSlice; Reader reads it (uncached: one
	// object, read once a minute).
	Client client.Client
	Reader client.Reader
	// Namespace and Service name the Service.
	Namespace, Service string
	// Address and Port are where this replica's Server listens.
	Address net.IP
	Port    int32
	// Every is how often the EndpointSlice is checked; default a minute.
	Every time.Duration
}

// NeedLeaderElection is true: only the leader is advertised.
func (a *Advertiser) NeedLeaderElection() bool { return true }

// Start writes the EndpointSlice, then keeps it until ctx ends.
func (a *Advertiser) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("visibility")
	every := a.Every
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := a.advertise(ctx); err != nil {
			log.Error(err, "Could not point the visibility Service at this replica", "service", a.Namespace+"/"+a.Service)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (a *Advertiser) advertise(ctx context.Context) error {
	want := a.slice()
	got := &discoveryv1.EndpointSlice{}
	err := a.Reader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		return a.Client.Create(ctx, want)
	case err != nil:
		return err
	}
	if got.AddressType == want.AddressType && len(got.Endpoints) == 1 && len(got.Endpoints[0].Addresses) == 1 &&
		got.Endpoints[0].Addresses[0] == want.Endpoints[0].Addresses[0] && len(got.Ports) == 1 && ptr.Deref(got.Ports[0].Port, 0) == a.Port {
		return nil
	}
	if got.AddressType != want.AddressType {
		// The address type cannot change: replace the slice.
		if err := a.Client.Delete(ctx, got); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return a.Client.Create(ctx, want)
	}
	got.Labels, got.Endpoints, got.Ports = want.Labels, want.Endpoints, want.Ports
	return a.Client.Update(ctx, got)
}

func (a *Advertiser) slice() *discoveryv1.EndpointSlice {
	typ := discoveryv1.AddressTypeIPv4
	if a.Address.To4() == nil {
		typ = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.Service, Namespace: a.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: a.Service, discoveryv1.LabelManagedBy: managedBy},
		},
		AddressType: typ,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{a.Address.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(a.Port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

// AdvertiseAddress is the address the API server is to call: configured,
// or else this machine's first address that is not loopback or link-local
// (a pod's own IP; a host's, for a controller run outside the cluster),
// which an EndpointSlice may name.
func AdvertiseAddress(configured string) (net.IP, error) {
	if configured != "" {
		ip := net.ParseIP(configured)
		if ip == nil {
			return nil, fmt.Errorf("visibility.advertiseAddress: %q is not an IP address", configured)
		}
		return ip, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var v6 net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP, nil
		}
		if v6 == nil {
			v6 = n.IP
		}
	}
	if v6 == nil {
		return nil, fmt.Errorf("visibility: this machine has no address but loopback and link-local; set visibility.advertiseAddress")
	}
	return v6, nil
}
