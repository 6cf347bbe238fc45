package kubectlberth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"k8s.io/client-go/discovery"

	visibilityv1alpha1 "github.com/berth-dev/berth/apis/visibility/v1alpha1"
)

// pendingPage reads one page of a queue's pending workloads from the
// visibility API at path (under /apis/visibility.berth.dev/v1alpha1).
type pendingPage func(ctx context.Context, path string, offset, limit int) (*visibilityv1alpha1.PendingWorkloadsSummary, error)

// defaultPending reads the API through the API server with the user's
// credentials.
func (o *options) defaultPending(ctx context.Context, path string, offset, limit int) (*visibilityv1alpha1.PendingWorkloadsSummary, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	// The discovery client's REST client reads any path as raw JSON.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := dc.RESTClient().Get().AbsPath("/apis/"+visibilityv1alpha1.GroupVersion.String()+"/"+path).
		Param("offset", strconv.Itoa(offset)).Param("limit", strconv.Itoa(limit)).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := &visibilityv1alpha1.PendingWorkloadsSummary{}
	return out, json.Unmarshal(raw, out)
}

// servedQueue reads every pending workload of a ClusterQueue (ns empty) or
// of a LocalQueue from the visibility API, in the controller's order, page
// by page. ok is false when the API is not served (not installed, the
// controller down) or refuses the user: the caller then orders the
// workloads itself, as kubectl berth did before the API.
func (o *options) servedQueue(ctx context.Context, ns, name string) (_ *visibilityv1alpha1.PendingWorkloadsSummary, ok bool) {
	if o.pending == nil {
		return nil, false
	}
	path := "clusterqueues/" + url.PathEscape(name) + "/pendingworkloads"
	if ns != "" {
		path = "namespaces/" + url.PathEscape(ns) + "/localqueues/" + url.PathEscape(name) + "/pendingworkloads"
	}
	var all *visibilityv1alpha1.PendingWorkloadsSummary
	for offset := 0; ; {
		page, err := o.pending(ctx, path, offset, visibilityv1alpha1.DefaultLimit)
		if err != nil {
			return nil, false
		}
		if all == nil {
			all = page
		} else {
			all.Items = append(all.Items, page.Items...)
		}
		offset += len(page.Items)
		if len(page.Items) < visibilityv1alpha1.DefaultLimit {
			return all, true
		}
	}
}

// servedPositions are a queue's positions as the visibility API gives them.
func servedPositions(s *visibilityv1alpha1.PendingWorkloadsSummary) PositionList {
	list := PositionList{Items: make([]Position, 0, len(s.Items))}
	for _, it := range s.Items {
		cq := int(it.PositionInClusterQueue)
		list.Items = append(list.Items, Position{
			Namespace: it.Namespace, Name: it.Name, LocalQueue: it.LocalQueueName, ClusterQueue: s.ClusterQueue,
			Priority: it.Priority, PositionInLocalQueue: int(it.PositionInLocalQueue), PositionInClusterQueue: &cq, Message: it.Message,
		})
	}
	return list
}

// servedWhy sets why's positions, and what is ahead, from the visibility
// API's page of the workload's LocalQueue: the workloads ahead of it in
// other LocalQueues, whose names the user may not read, are counted in
// AheadElsewhere. It reports false, leaving why as it is, when the API
// does not answer or does not hold the workload.
func (o *options) servedWhy(ctx context.Context, why *Why, ns, localQueue string) bool {
	s, ok := o.servedQueue(ctx, ns, localQueue)
	if !ok {
		return false
	}
	for _, it := range s.Items {
		if it.Name != why.Workload {
			continue
		}
		lq, cq := int(it.PositionInLocalQueue), int(it.PositionInClusterQueue)
		why.PositionInLocalQueue, why.PositionInClusterQueue = &lq, &cq
		requests := map[string]map[string]string{}
		for _, a := range why.Ahead {
			requests[a.Namespace+"/"+a.Name] = a.Requests
		}
		why.Ahead = []Ahead{}
		for _, other := range s.Items {
			if other.PositionInClusterQueue < it.PositionInClusterQueue {
				why.Ahead = append(why.Ahead, Ahead{Namespace: other.Namespace, Name: other.Name, Priority: other.Priority, Requests: requests[other.Namespace+"/"+other.Name]})
			}
		}
		why.AheadElsewhere = cq - 1 - len(why.Ahead)
		return true
	}
	return false
}

// notServed is what a test's options answer: the API is not there.
func notServed(context.Context, string, int, int) (*visibilityv1alpha1.PendingWorkloadsSummary, error) {
	return nil, fmt.Errorf("visibility.berth.dev is not served")
}
