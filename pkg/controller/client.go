package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controller/core"
)

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
