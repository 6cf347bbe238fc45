// Package multicluster is Berth's side of worker clusters: the clusters,
// other than the one it runs in, where workloads may be dispatched to run
// under the worker's own Berth.
//
// WorkerClusterReconciler keeps each WorkerCluster's Active condition: it
// reads the worker's kubeconfig from a Secret in Berth's namespace, with a
// direct read (the controller watches no Secrets, and may read only those
// of its own namespace), and asks the worker's API server for its version.
// It does so again every 30 seconds, so that a worker that stops answering,
// or a Secret that changes, shows within that time; one that cannot be
// reached is asked every 3 seconds, so that its return shows at once.
//
// Dispatcher runs the admission checks of berth.dev/multicluster. Once
// the manager reserves quota for a workload with such a check, it copies
// the workload's job to every reachable worker of the check's
// MultiClusterConfig, held, with the origin label: a Job or JobSet (whose
// spec.managedBy keeps the manager's own controller of the kind away),
// suspended; or each pod of a plain pod or pod group, at Berth's gate
// (the manager's pods stay at theirs, since a pod cannot be handed to
// another controller). Each worker's own Berth queues its copies; the
// first that reserves quota wins: the check turns Ready, the Workload's
// status.clusterName names the worker, and the other copies are deleted.
// From then on each copy's status is mirrored onto the manager's object,
// so that the manager's Berth sees it run and finish. A copy the manager
// no longer needs (its workload finished, requeued or deleted, or the
// copy of an earlier attempt) is deleted whenever the dispatcher sees it,
// with the pods of a Job or JobSet that ran there. A worker that has not answered
// for longer than the lost timeout has its workloads requeued with the
// check's Retry.
//
// The workers' caches hold only this manager's copies and the Workloads
// made for them (the origin label selects both), and wake the dispatcher
// on every change: dispatch costs the workers no polling.
package multicluster
