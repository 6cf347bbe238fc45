// Package gpupacking is the BerthGPUPacking scheduler plugin: it scores nodes
// so that a workload's GPU pods land on as few nodes as possible and partly
// used GPU nodes fill up before empty ones, which keeps whole nodes free for
// the next large gang.
//
// For a pod that requests nvidia.com/gpu, a node scores in two tiers:
//
//   - nodes that already run (or have been assumed for) a pod of the same
//     Berth Workload score from 50 to 100;
//   - other nodes score from 1 to 49;
//
// and within a tier the score grows with the fraction of the node's GPUs
// that would be allocated once the pod is placed. A node without enough free
// GPUs scores 0 (the NodeResourcesFit filter normally removes it first).
// Pods that request no GPU skip the plugin (PreScore returns Skip), which is
// the same as giving every node the same score.
//
// The plugin does not implement SignPlugin on purpose: placing one pod of a
// workload changes the scores of the next (its node joins the first tier and
// gets fuller), so the scheduler must not reuse one pod's node ranking for
// the next, which is what opportunistic batching does for pods with equal
// signatures.
//
// The package reads only the scheduler's snapshot, through the NodeInfo the
// framework passes to Score; it keeps no state between scheduling cycles.
package gpupacking
