// Package flavorassigner chooses, for each podset of a workload and each
// resource group of its ClusterQueue, the flavor the podset's resources
// are taken from, and says how it fits: outright, by borrowing, only by
// preempting, or not at all. It applies the queue's flavorFungibility and
// partial admission (minCount).
//
// It reads a cache.Snapshot and never mutates it; it makes no preemption
// decisions and does no I/O. When a workload does not fit, it records per
// flavor tried the numbers behind the verdict, rendered by Message.
package flavorassigner
