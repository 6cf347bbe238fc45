// Package multicluster is Berth's side of worker clusters: the clusters,
// other than the one it runs in, where workloads may be dispatched to run
// under the worker's own Berth.
//
// WorkerClusterReconciler keeps each WorkerCluster's Active condition: it
// reads the worker's kubeconfig from a Secret in Berth's namespace, with a
// direct read (the controller watches no Secrets, and may read only those
// of its own namespace), and asks the worker's API server for its version.
// It does so again every 30 seconds, so that a worker that stops answering,
// or a Secret that changes, shows within that time.
package multicluster
