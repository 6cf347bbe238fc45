// Package gang is the BerthGang scheduler plugin: all-or-nothing placement of
// the pods of one podset of a Berth Workload.
//
// A pod carrying the berth.dev/workload and berth.dev/podset labels waits at
// Permit, holding the node the scheduler assumed for it, until every member of
// its gang has a node. The gang is the set of pods in the same namespace with
// the same two labels that exist and are neither terminal nor being deleted,
// as the scheduler's pod informer sees them. A member has a node when it is
// bound (spec.nodeName is set) or is waiting at Permit. The pod whose Permit
// completes the gang allows all waiting members at once.
//
// If the gang is not complete within the timeout (Args.TimeoutSeconds,
// default 30s), the framework rejects the waiting pod, and Unreserve rejects
// every other waiting member of its gang, so that no gang keeps GPUs while
// only part of it is placed. The rejected pods go back to the scheduling
// queue and try again as a whole.
//
// Pods without both labels pass Permit at once.
//
// Counting the pods that exist, rather than a size written on the pods, has
// two known limits. A controller that creates a gang's pods in batches (the
// Job controller does) can let the first pods through before it creates the
// rest; a pod-level size set by the Berth controller at admission would close
// that gap and needs an API addition. And waiting pods are judged again only
// when another member reaches Permit: if a member is deleted instead, the
// others wait for the timeout and then retry as a whole.
//
// The package must not write to the API: it only reads the pod lister and
// the framework's waiting pods.
package gang
