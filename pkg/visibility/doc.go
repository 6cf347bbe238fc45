// Package visibility serves visibility.berth.dev/v1alpha1, the pending
// workloads of a ClusterQueue or of a LocalQueue in the order the
// scheduler will try them, as an API the Kubernetes API server aggregates:
// a namespace's users read their LocalQueues' positions (and the
// ClusterQueue's length as a count) with their own RBAC, and nobody lists
// Workloads to learn them.
//
// NewHandler answers from the controller's own queues (a queue.Snapshot:
// the first page of 50,000 waiting workloads costs a walk of the buckets'
// heap tops, not a sort); Server listens with the certificate of
// pkg/certs and lets through only the API server's front proxy;
// Advertiser routes the selector-less Service to the leader.
//
// Why not k8s.io/apiserver's generic server: it brings a storage layer,
// OpenAPI generation, admission and its own flags for two read-only
// paths. The parts that matter for trust, the front-proxy authentication
// against the CA the API server publishes, are that library's own
// (headerrequest, dynamiccertificates) and are used here as they are.
package visibility
