// Package topology holds the fabric of a flavor's nodes: its domains by
// level (block, rack, host, as a Topology names them by node label), what
// each node has free, and the search for the domains that take a podset.
//
// Quota says whether a workload may run; the fabric says whether its pods
// can be placed as the podset asks: all in one rack, in as few blocks as
// possible, or in slices of so many pods each inside one rack. A search
// answers with the hosts and pod counts (an Assignment), or with why none
// fits, in numbers (a Miss).
//
// Berth keeps its own search rather than the kube-scheduler framework's:
// the framework places one pod at a time against a node, where admission
// needs a whole gang against a tree of domains, many times a cycle and
// without side effects on the real scheduler's state.
package topology
