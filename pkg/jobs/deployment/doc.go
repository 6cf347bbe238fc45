// Package deployment integrates Deployments: each replica of a Deployment
// labelled berth.dev/queue-name is its own Workload, so that scaling up
// queues the new replicas and a preempted replica's pod is created again,
// held, by its ReplicaSet. The package holds only a webhook that hands the
// Deployment's queue and priority labels down to its pod template; the pod
// integration (pkg/jobs/pod) does the rest, and must be enabled with it.
// Importing the package registers the integration "deployment".
package deployment
