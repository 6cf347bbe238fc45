package kubectlberth

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
)

// kinds are what the dashboard watches, each with an object of its kind
// and whether it is namespaced.
var kinds = []struct {
	list       client.ObjectList
	obj        client.Object
	namespaced bool
	plural     string
}{
	{&berthv1alpha1.ClusterQueueList{}, &berthv1alpha1.ClusterQueue{}, false, "ClusterQueues"},
	{&berthv1alpha1.ResourceFlavorList{}, &berthv1alpha1.ResourceFlavor{}, false, "ResourceFlavors"},
	{&berthv1alpha1.CohortList{}, &berthv1alpha1.Cohort{}, false, "Cohorts"},
	{&corev1.NamespaceList{}, &corev1.Namespace{}, false, "Namespaces"},
	{&berthv1alpha1.LocalQueueList{}, &berthv1alpha1.LocalQueue{}, true, "LocalQueues"},
	{&berthv1alpha1.WorkloadList{}, &berthv1alpha1.Workload{}, true, "Workloads"},
}

// watch starts informers on what the user may read, through the user's
// own credentials, one watch per kind, and waits until they have read the
// cluster. The pages read the informers' stores, so a page costs no
// request to the API server.
// A kind the user may not list cluster-wide is watched in the command's
// namespace; one the user may not list at all is not watched, and reads
// of it answer Forbidden, as the API server would.
func (o *options) watch(ctx context.Context) (*dashboard.Live, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	direct, err := o.newClient()
	if err != nil {
		return nil, err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	feed := dashboard.NewFeed()
	opts := cache.Options{
		Scheme: scheme, ByObject: map[client.Object]cache.ByObject{},
		DefaultTransform:             cache.TransformStripManagedFields(),
		DefaultUnsafeDisableDeepCopy: ptr.To(true),
	}
	scopes := map[reflect.Type]string{}
	for _, k := range kinds {
		scope, ok, err := readable(ctx, direct, k.list, k.namespaced, ns)
		if err != nil {
			return nil, dashboard.ReadError(err)
		}
		if !ok && k.namespaced {
			return nil, fmt.Errorf("not allowed to list %s in every namespace, nor in namespace %s: name the namespace of your queues with -n", k.plural, ns)
		}
		if !ok {
			continue
		}
		scopes[reflect.TypeOf(k.list)] = scope
		if scope != "" {
			opts.ByObject[k.obj] = cache.ByObject{Namespaces: map[string]cache.Config{scope: {}}}
		}
	}
	informers, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if _, ok := scopes[reflect.TypeOf(k.list)]; !ok {
			continue
		}
		inf, err := informers.GetInformer(ctx, k.obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(feed.Handler(k.obj)); err != nil {
			return nil, err
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the watches did not start: %w", context.Cause(ctx))
	}
	go feed.Run(ctx)
	return feed.Source(permitted{Reader: informers, scopes: scopes}, "", ns), nil
}

// readable finds where the user may list a kind: everywhere (""), only in
// namespace ns, or nowhere.
func readable(ctx context.Context, c client.Reader, list client.ObjectList, namespaced bool, ns string) (string, bool, error) {
	err := c.List(ctx, list, client.Limit(1))
	if err == nil {
		return "", true, nil
	}
	if !apierrors.IsForbidden(err) {
		return "", false, err
	}
	if !namespaced {
		return "", false, nil
	}
	if err := c.List(ctx, list, client.Limit(1), client.InNamespace(ns)); apierrors.IsForbidden(err) {
		return "", false, nil
	} else if err != nil {
		return "", false, err
	}
	return ns, true, nil
}

// permitted reads the informers' stores, and answers Forbidden for what
// is not watched, as the API server answered the user.
type permitted struct {
	client.Reader
	// scopes is, per list type watched, the namespace it is watched in (""
	// for all).
	scopes map[reflect.Type]string
}

// List lists from the stores what is watched in the namespace asked.
func (p permitted) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	scope, ok := p.scopes[reflect.TypeOf(list)]
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if !ok || (scope != "" && lo.Namespace != scope) {
		return apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("not watched: %T", list))
	}
	return p.Reader.List(ctx, list, opts...)
}
