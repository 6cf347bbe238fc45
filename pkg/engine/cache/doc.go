// Package cache owns the quota tree: ClusterQueues and Cohorts built from
// the API objects, the ResourceFlavors they name, and the usage of the
// workloads that hold quota (admitted, reserved, or assumed by the
// scheduler while its write is in flight).
//
// Cache is the live, mutex-protected state the controllers feed. Snapshot
// is a frozen copy for one scheduling cycle: decisions read and mutate only
// the snapshot, so they are repeatable and need no lock. Taking a snapshot
// copies the quota numbers of every node (a few slices) but not the
// workloads: workload sets are shared copy-on-write, so a cycle costs
// O(queues) rather than O(workloads).
//
// Quota model, per flavor and resource, for a node n (a ClusterQueue or a
// Cohort):
//
//	subtree(n)    = nominal(n) + sum of lendable(c) over n's children c
//	lendable(n)   = min(lendingLimit(n), subtree(n)), or subtree(n) without a limit
//	guaranteed(n) = subtree(n) - lendable(n), kept for n's subtree alone
//	demand(n)     = usage of n for a ClusterQueue; for a Cohort, the sum of
//	                max(0, demand(c) - guaranteed(c)): what children draw
//	                from its pool
//	available(n)  = min(max(0, guaranteed(n) - demand(n)) + available(parent),
//	                    subtree(n) + borrowingLimit(n) - demand(n))
//
// At a root, guaranteed = subtree and nothing is borrowed. Demand is
// updated incrementally along the path to the root when usage changes.
//
// The package does no I/O and must not import an API client.
package cache
