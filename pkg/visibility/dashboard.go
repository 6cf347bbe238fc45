package visibility

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	visibilityv1alpha1 "github.com/berth-dev/berth/apis/visibility/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
)

// Dashboard serves kubectl berth dashboard's pages (pkg/dashboard) from the
// controller's cache, read-only, under the API, so that a team opens one
// address through kubectl proxy instead of running the plugin:
//
//	/apis/visibility.berth.dev/v1alpha1/clusterdashboard/overview
//	/apis/visibility.berth.dev/v1alpha1/namespaces/NS/dashboard/overview
//
// Each page is a name of a resource, so the API server's RBAC decides who
// reads them before it proxies the request: get on clusterdashboard shows
// every queue, as the plugin shows them to a cluster reader; get on
// dashboard in a namespace shows that namespace's LocalQueues and
// Workloads only, as the plugin shows them to berth-batch-user, who may
// not read ClusterQueues.
type Dashboard struct {
	pages *dashboard.Pages
	feed  *dashboard.Feed
	// reader is the controller's cache.
	reader client.Reader
	// cluster is the cluster-wide view, whose snapshot is kept until the
	// next change.
	cluster *dashboard.Live
}

// NewDashboard serves the pages from reader; feed must hear the events of
// the informers behind reader (ClusterQueues, LocalQueues, Cohorts,
// ResourceFlavors, Workloads) and run.
func NewDashboard(reader client.Reader, feed *dashboard.Feed) (*Dashboard, error) {
	pages, err := dashboard.NewPages()
	if err != nil {
		return nil, err
	}
	reader = noCopy{reader}
	return &Dashboard{pages: pages, feed: feed, reader: reader, cluster: feed.Source(reader, "", "")}, nil
}

// The paths of the cluster-wide pages, and of a namespace's under
// namespaces/NS/ of the group version.
const (
	clusterDashboardPath = "/" + visibilityv1alpha1.ClusterDashboardResource
	dashboardPath        = "/" + visibilityv1alpha1.DashboardResource
)

func (d *Dashboard) register(mux *http.ServeMux, prefix string) {
	clusterWide := http.StripPrefix(prefix+clusterDashboardPath, d.pages.Handler(d.cluster, "served by the Berth controller"))
	mux.Handle("GET "+prefix+clusterDashboardPath+"/{page}", clusterWide)
	mux.HandleFunc("GET "+prefix+"/namespaces/{namespace}"+dashboardPath+"/{page}", func(w http.ResponseWriter, r *http.Request) {
		ns := r.PathValue("namespace")
		src := d.feed.Source(inNamespace{Reader: d.reader, namespace: ns}, ns, "")
		h := d.pages.Handler(src, "namespace "+ns+", served by the Berth controller")
		http.StripPrefix(prefix+"/namespaces/"+ns+dashboardPath, h).ServeHTTP(w, r)
	})
}

// noCopy lists from the cache without copying: the pages only read what
// they list, and a cluster's Workloads copied for each page would be most
// of the page's cost.
type noCopy struct{ client.Reader }

// List lists without a deep copy.
func (c noCopy) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...)
}

// inNamespace reads one namespace's LocalQueues and Workloads, and
// refuses the cluster's queues, flavors, cohorts and namespaces as the
// API server refuses them to berth-batch-user.
type inNamespace struct {
	client.Reader
	namespace string
}

// List lists LocalQueues and Workloads in the namespace only.
func (r inNamespace) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *berthv1alpha1.LocalQueueList, *berthv1alpha1.WorkloadList:
		return r.Reader.List(ctx, list, append(opts, client.InNamespace(r.namespace))...)
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: visibilityv1alpha1.GroupVersion.Group, Resource: visibilityv1alpha1.DashboardResource},
		r.namespace, fmt.Errorf("a namespace's dashboard shows its LocalQueues and Workloads only, not %T", list))
}
