// Package pod integrates plain pods: a pod with the queue label is one
// Workload of one pod. It is held by the scheduling gate berth.dev/admission,
// which the webhook adds when the pod is created (gates cannot be added
// later), and admission removes the gate and adds the flavor's node selector
// and tolerations, which a gated pod may still take. A pod cannot be held
// again once it runs: to stop it, Berth deletes it, and its owner (a
// ReplicaSet of a Deployment, say) creates it again, held, in the queue.
//
// Pods that another kind's controller makes in groups are put in their
// group by that kind's integration, through a GroupJoiner it registers
// (pkg/jobs/leaderworkerset); a kind that sizes and owns its pods' group
// registers a GroupOwner (pkg/jobs/statefulset).
//
// Pods that another framework runs (those of a Job) are left to it, and
// pods outside the configured namespaces are never touched. Importing the
// package registers the integration "pod".
package pod
