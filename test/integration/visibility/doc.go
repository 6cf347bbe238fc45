// Package visibility tests the visibility API (visibility.berth.dev)
// through a real kube-apiserver's aggregation layer: the API server
// proxies a user's request, after its own RBAC, to a Berth controller
// manager run in the test, which answers from its queues; the controller's
// certificate reaches the APIService through its certificate manager, and
// its EndpointSlice names this machine.
package visibility
