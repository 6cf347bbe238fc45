// Package rayjob integrates KubeRay's RayJobs (ray.io/v1, module
// github.com/ray-project/kuberay/ray-operator): one podset for the Ray
// head, one per worker group, and one for the submitter pod that KubeRay
// runs in K8sJobMode, admitted together as one Workload. The RayJob is
// held through its own spec.suspend, which KubeRay honours by deleting its
// RayCluster and submitter. Importing it registers the integration
// "ray.io/rayjob", which the configuration's frameworks must name.
//
// The podsets count what KubeRay will run, never less: a worker group's
// replicas are bounded by its minReplicas and maxReplicas as KubeRay bounds
// them, times its numOfHosts; the submitter without a template of the
// user's is the one KubeRay makes, with its requests. What Berth cannot
// bound is refused, the field named: a RayJob that runs on an existing
// cluster (clusterSelector), Ray's autoscaler, the sidecar submission mode,
// whose container KubeRay adds to the head pod.
package rayjob
