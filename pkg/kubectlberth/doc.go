// Package kubectlberth is kubectl berth, the kubectl plugin: positions,
// why, usage, stop and resume, what-if, the dashboard, the audit, and convert
// (Kueue's manifests as Berth's, pkg/fromkueue). It reads the
// cluster through the user's own credentials, with kubectl's flags
// (k8s.io/cli-runtime), and writes nothing but what stop and resume
// change.
//
// It computes what the controller computes with the controller's own code:
// positions with the queues' order (queue.Sort), what-if with the
// scheduler itself (pkg/engine/scheduler) run once on a snapshot of the cluster
// with a recording applier, the Workload of a job with the job layer
// (jobframework.WorkloadFor), the audit with the controller's comparison
// (audit.Compare). cmd/kubectl-berth only wires it.
package kubectlberth
