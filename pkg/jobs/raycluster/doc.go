// Package raycluster integrates KubeRay's RayClusters (ray.io/v1, module
// github.com/ray-project/kuberay/ray-operator): one podset for the Ray head
// and one per worker group, admitted together as one Workload and held
// through the cluster's own spec.suspend, which KubeRay honours by deleting
// the cluster's pods. A RayCluster serves until it is deleted: its quota is
// held until then. Importing it registers the integration
// "ray.io/raycluster", which the configuration's frameworks must name.
//
// The cluster that KubeRay makes for a RayJob Berth holds is not queued on
// its own: it runs on the RayJob's Workload (pkg/jobs/rayjob), which
// counts its pods. It is told apart by its controller reference to the
// RayJob and the RayJob's status naming it, so that a cluster made beside
// it cannot pass for it; while it runs, a change of its podsets is refused
// as for any running job, and so is taking its queue label off.
//
// The podsets count what KubeRay will run, never less (spec.go, shared with
// the RayJob integration): a worker group's replicas are bounded by its
// minReplicas and maxReplicas as KubeRay bounds them, times its numOfHosts.
// What Berth cannot bound is refused, the field named: Ray's autoscaler,
// more worker groups than a Workload has podsets, a group name that cannot
// name a podset.
package raycluster
