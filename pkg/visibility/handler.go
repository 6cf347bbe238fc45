package visibility

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	visibilityv1alpha1 "github.com/berth-dev/berth/apis/visibility/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// Queues is where the pending workloads are read: the controller's
// queue.Manager.
type Queues interface {
	Snapshot(cq berthv1alpha1.ClusterQueueReference) (*queue.Snapshot, bool)
}

// LocalQueueOf returns the ClusterQueue a LocalQueue submits to, or a
// NotFound error.
type LocalQueueOf func(ctx context.Context, namespace, name string) (berthv1alpha1.ClusterQueueReference, error)

var groupVersion = visibilityv1alpha1.GroupVersion.String()

// NewHandler serves the API's discovery and its two reads from queues,
// and the dashboard's pages when dash is not nil. ready reports whether
// this replica's queues are the scheduler's (it leads); a replica that
// does not answers 503, so that a caller never reads an empty queue that
// is not. The dashboard reads the cache, which every replica holds.
func NewHandler(queues Queues, localQueueOf LocalQueueOf, ready func() bool, dash *Dashboard) http.Handler {
	h := &handler{queues: queues, localQueueOf: localQueueOf, ready: ready}
	mux := http.NewServeMux()
	prefix := "/apis/" + groupVersion
	mux.HandleFunc("GET /apis", h.groups)
	mux.HandleFunc("GET /apis/"+visibilityv1alpha1.GroupVersion.Group, h.group)
	mux.HandleFunc("GET "+prefix, h.resources)
	mux.HandleFunc("GET "+prefix+"/clusterqueues/{name}/pendingworkloads", h.clusterQueue)
	mux.HandleFunc("GET "+prefix+"/namespaces/{namespace}/localqueues/{name}/pendingworkloads", h.localQueue)
	if dash != nil {
		dash.register(mux, prefix)
	}
	return mux
}

type handler struct {
	queues       Queues
	localQueueOf LocalQueueOf
	ready        func() bool
}

func (h *handler) groups(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   []metav1.APIGroup{apiGroup()},
	})
}

func (h *handler) group(w http.ResponseWriter, _ *http.Request) {
	g := apiGroup()
	g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
	writeJSON(w, http.StatusOK, &g)
}

func apiGroup() metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: groupVersion, Version: visibilityv1alpha1.GroupVersion.Version}
	return metav1.APIGroup{Name: visibilityv1alpha1.GroupVersion.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

// resources lists what kubectl and RBAC know the API by: the queues are
// listed only as the parents of their pendingworkloads subresource.
func (h *handler) resources(w http.ResponseWriter, _ *http.Request) {
	sub := func(parent string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{
			Name: parent + "/" + visibilityv1alpha1.PendingWorkloadsResource, Namespaced: namespaced,
			Kind: "PendingWorkloadsSummary", Verbs: metav1.Verbs{"get"},
		}
	}
	writeJSON(w, http.StatusOK, &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: groupVersion,
		APIResources: []metav1.APIResource{
			sub(visibilityv1alpha1.ClusterQueuesResource, false),
			sub(visibilityv1alpha1.LocalQueuesResource, true),
		},
	})
}

func (h *handler) clusterQueue(w http.ResponseWriter, r *http.Request) {
	offset, limit, ok := h.page(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	s, known := h.queues.Snapshot(berthv1alpha1.ClusterQueueReference(name))
	if !known {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: berthv1alpha1.GroupVersion.Group, Resource: "clusterqueues"}, name))
		return
	}
	out := summary(name, "", name, s)
	// One walk to the page's end: a LocalQueue's position counts its
	// workloads before the page too.
	inLQ := map[string]int32{}
	at := 0
	s.Walk(func(info *workload.Info) bool {
		lq := workload.LocalQueueKey(info.Obj)
		inLQ[lq]++
		if at >= offset {
			out.Items = append(out.Items, item(info, int32(at+1), inLQ[lq]))
		}
		at++
		return at < offset+limit
	})
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) localQueue(w http.ResponseWriter, r *http.Request) {
	offset, limit, ok := h.page(w, r)
	if !ok {
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	cq, err := h.localQueueOf(r.Context(), ns, name)
	if err != nil {
		writeStatus(w, err)
		return
	}
	s, known := h.queues.Snapshot(cq)
	if !known {
		// A LocalQueue of a ClusterQueue that does not exist: nothing waits
		// in order; its workloads say why they wait.
		writeJSON(w, http.StatusOK, summary(name, ns, string(cq), nil))
		return
	}
	out := summary(name, ns, string(cq), s)
	mine := s.Select(func(info *workload.Info) bool {
		return info.Obj.Namespace == ns && string(info.Obj.Spec.QueueName) == name
	})
	out.PendingInLocalQueue = int32(len(mine))
	if offset >= len(mine) {
		writeJSON(w, http.StatusOK, out)
		return
	}
	mine = mine[offset:min(len(mine), offset+limit)]
	for i, before := range s.Before(mine) {
		out.Items = append(out.Items, item(mine[i], int32(before+1), int32(offset+i+1)))
	}
	writeJSON(w, http.StatusOK, out)
}

// page reads offset and limit, or answers 400 naming the one that is not
// a number in range.
func (h *handler) page(w http.ResponseWriter, r *http.Request) (offset, limit int, ok bool) {
	if !h.ready() {
		writeStatus(w, apierrors.NewServiceUnavailable("this replica of the Berth controller does not lead; its queues are not the scheduler's"))
		return 0, 0, false
	}
	q := r.URL.Query()
	offset, limit = 0, visibilityv1alpha1.DefaultLimit
	for _, p := range []struct {
		name     string
		into     *int
		min, max int
	}{{"offset", &offset, 0, 1 << 30}, {"limit", &limit, 1, visibilityv1alpha1.MaxLimit}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < p.min || n > p.max {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("%s: %q is not a whole number from %d to %d", p.name, v, p.min, p.max)))
			return 0, 0, false
		}
		*p.into = n
	}
	return offset, limit, true
}

func summary(name, namespace, cq string, s *queue.Snapshot) *visibilityv1alpha1.PendingWorkloadsSummary {
	out := &visibilityv1alpha1.PendingWorkloadsSummary{
		TypeMeta:     metav1.TypeMeta{Kind: "PendingWorkloadsSummary", APIVersion: groupVersion},
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: namespace},
		ClusterQueue: cq,
		Items:        []visibilityv1alpha1.PendingWorkload{},
	}
	if s != nil {
		out.PendingInClusterQueue = int32(s.Len())
	}
	return out
}

func item(info *workload.Info, inCQ, inLQ int32) visibilityv1alpha1.PendingWorkload {
	out := visibilityv1alpha1.PendingWorkload{
		Namespace: info.Obj.Namespace, Name: info.Obj.Name, LocalQueueName: string(info.Obj.Spec.QueueName),
		Priority: info.Priority, PositionInClusterQueue: inCQ, PositionInLocalQueue: inLQ,
	}
	if c := workload.FindCondition(info.Obj, berthv1alpha1.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
		out.Message = c.Message
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeStatus answers with err as the API server would: a Status with its
// reason and code.
func writeStatus(w http.ResponseWriter, err error) {
	status := apierrors.APIStatus(nil)
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s
	} else {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(st.Code), &st)
}

func unauthorized(msg string) error { return apierrors.NewUnauthorized(msg) }
