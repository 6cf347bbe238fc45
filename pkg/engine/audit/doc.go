// Package audit checks Berth's promise that what runs never exceeds what
// was admitted, from what runs rather than from Berth's own books. Given
// the pods, Workloads and LocalQueues of a cluster, Compare finds, per
// ClusterQueue, the running pods whose use no admission holds: the pods of
// an admitted Workload that together use more of a resource than its
// admission holds (more pods than admitted, or bigger ones), and the pods
// that run with no admitted Workload at all while naming a LocalQueue.
//
// A pod runs when it is bound to a node and has not succeeded or failed;
// a terminating pod still runs. What it uses is its requests as Kubernetes
// computes them (workload.RunningPodRequests); what an admission holds is
// what the scheduler counted against quota (workload.AdmissionUsage), so a
// resource the ClusterQueue does not cover is never compared for an
// admitted Workload. A pod with no admitted Workload is counted whole.
//
// A pod belongs to the Workload that its owner references prove it part
// of, where that is cheap: the Workload is owned by the pod itself (a
// plain pod, a Deployment's replica, a pod of a group) or by the pod's
// controller (a Job, a StatefulSet). Otherwise it belongs to the Workload
// its label berth.dev/workload names: only Berth sets or changes that
// label (its webhook refuses anyone else), on the pods of the job it
// admitted. An owner that several Workloads name proves nothing, unless
// exactly one of them holds quota.
//
// It is pure: no client, no clock, no I/O, so that the controller
// (pkg/auditor), which feeds it from its informers' caches, and kubectl
// berth audit, which feeds it what the user may read, find the same
// things. It must not write anything nor decide what to do about a
// finding: the controller publishes a metric and events, the plugin
// prints.
package audit
