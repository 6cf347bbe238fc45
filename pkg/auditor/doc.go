// Package auditor runs the quota audit (pkg/engine/audit) in the controller, on
// the leader: a few seconds after pods or Workloads change, and every 30
// seconds regardless, it compares what runs with what each ClusterQueue
// admitted, sets the metric berth_unaccounted_resources (0 for each
// resource a ClusterQueue covers while all is well), and puts a Warning
// event, reason UnaccountedPods, on the owner of each new finding: the
// job of a Workload whose pods use more than its admission, or a pod that
// runs with no admitted Workload. A finding is told once, and again only
// if it goes away and comes back.
//
// It reads the informers' own objects, never copies, and computes nothing
// of its own: the comparison is audit.Compare, the same that kubectl berth
// audit runs. Most of an audit's cost is Kubernetes' computation of the
// pods' requests, which an audit.Memo keeps from one audit to the next
// (BenchmarkCompare: an audit of 15,000 Workloads and 30,000 pods costs a
// few tens of milliseconds once warm); audits are at least minGap apart,
// however often pods change.
//
// The pods it reads come from two caches. The manager's holds the pods
// with berth.dev/managed, which Berth sets on the pods it holds or runs:
// those of admitted jobs, and queued pods from their creation. A pod that
// names a LocalQueue and escaped Berth (created while its webhook was
// down, or before Berth was installed) has no such label, and is exactly
// what the audit looks for: a second cache holds the pods with
// berth.dev/queue-name and without berth.dev/managed, selected by the API
// server, so that it holds the pods the first one misses and nothing else.
// Neither caches every pod of the cluster, and the second one's watch
// carries no event at all while all is well. A List of every queue-labelled
// pod on a timer would have cost the API server a list of all of them (a
// Deployment's replicas among them) each time, for what a watch tells once.
//
// It must not write anything but events, and decides nothing about
// admission: it only tells.
package auditor
