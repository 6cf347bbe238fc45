// Package topology is the BerthTopology scheduler plugin: it places the pods
// of a podset that Berth admitted on a Topology inside the domains of its
// admission, each domain taking the count of pods the admission gave it and
// no more.
//
// Berth's controller writes the podset's topologyAssignment on its pods, as
// JSON in the berth.dev/podset-topology-assignment annotation, next to a
// node selector for the narrowest domain that holds them all. The selector
// is enough for a gang admitted to one rack; for a gang spread over several
// racks or hosts it keeps the pods only inside their common block, and this
// plugin does the rest.
//
// At PreFilter the plugin counts, per domain of the assignment, the live
// pods of the same podset (same Workload and podset labels) on the domain's
// nodes in the scheduler's snapshot, which holds the pods bound and those
// assumed (waiting at Permit for their gang, or binding). Nodes of the
// domains that still have room are the only ones the pod may go to; when no
// domain has room, the pod is unschedulable and unresolvable until a pod is
// deleted or finishes. A node is in a domain when its labels for the
// assignment's levels have the domain's values.
//
// Pods without the annotation skip the plugin. The plugin keeps no state
// between cycles, and does not implement SignPlugin: placing one pod of a
// podset changes where the next may go.
package topology
