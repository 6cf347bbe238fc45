package controller

import (
	"k8s.io/client-go/rest"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
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
