package gpupacking

import (
	fwk "k8s.io/kube-scheduler/framework"
)

// Score ranges of the two tiers, see the package documentation. The tiers do
// not overlap, so running the same workload always wins over packing.
const (
	otherMin    = fwk.MinScore + 1
	otherMax    = fwk.MaxScore/2 - 1
	workloadMin = fwk.MaxScore / 2
	workloadMax = fwk.MaxScore
)

// gpuNode is what the score needs to know about a node.
type gpuNode struct {
	// Allocatable is the number of GPUs the node offers.
	Allocatable int64
	// Requested is the number of GPUs requested by the pods on the node,
	// including pods the scheduler has assumed but not bound yet.
	Requested int64
	// RunsWorkload is true when a pod of the same Workload is on the node.
	RunsWorkload bool
}

// score returns the node's score for a pod requesting want GPUs (want > 0).
func score(want int64, n gpuNode) int64 {
	free := n.Allocatable - n.Requested
	if n.Allocatable <= 0 || free < want {
		return fwk.MinScore
	}
	lo, hi := otherMin, otherMax
	if n.RunsWorkload {
		lo, hi = workloadMin, workloadMax
	}
	// Fraction of the node's GPUs in use after placing the pod, mapped onto
	// the tier's range: fuller is better.
	used := n.Requested + want
	return lo + (hi-lo)*used/n.Allocatable
}
