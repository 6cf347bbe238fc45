package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
	"github.com/berth-dev/berth/pkg/controller/core"
)

// ClientConfig is base as Berth's manager talks to the API server: at the
// configured rate limit, and without asking for gzip.
//
// A client that accepts gzip gets every event of a watch that began with a
// streamed list (client-go's informers since Kubernetes 1.37) compressed
// on its own: a new gzip stream per event, for each such watcher. For a
// Workload event that costs the API server about 37 µs and Berth 10 µs
// to undo, against 14 µs to decode the event (BenchmarkPerEventGzip and
// BenchmarkDecode in pkg/fastwatch); the bytes it saves cross the
// cluster's network, not a slow link. Lists above the API server's
// threshold for compression come uncompressed too.
func ClientConfig(base *rest.Config, cc configv1alpha1.ClientConnection) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = cc.QPS, int(cc.Burst)
	cfg.DisableCompression = true
	return cfg
}

// NewClient is the manager's client (ctrl.Options.NewClient):
// controller-runtime's, with Workload status writes sent as PUTs
// (core.WithStatusPut) over the manager's HTTP client.
func NewClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	if opts.HTTPClient == nil {
		httpClient, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		opts.HTTPClient = httpClient
	}
	c, err := client.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	gvk := berthv1alpha1.GroupVersion.WithKind("Workload")
	workloads, err := apiutil.RESTClientForGVK(gvk, false, false, cfg, serializer.NewCodecFactory(opts.Scheme), opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", gvk, err)
	}
	return core.WithStatusPut(c, workloads), nil
}
