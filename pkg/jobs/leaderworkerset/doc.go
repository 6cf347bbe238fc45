// Package leaderworkerset integrates LeaderWorkerSets (sigs.k8s.io/lws):
// each group of a LeaderWorkerSet labelled berth.dev/queue-name, its leader
// and its workers, is one pod group, admitted whole or not at all. The
// package holds a webhook that hands the LeaderWorkerSet's queue and
// priority labels down to its leader and worker templates, and the
// GroupJoiner (group.go) that puts each pod in its group, from the labels
// the LeaderWorkerSet's controller gives it, when the pod integration
// (pkg/jobs/pod), which must be enabled with it, holds the pod.
//
// The webhook reads and patches the object as JSON rather than through
// the LeaderWorkerSet's Go types: it touches two label maps, and Berth need
// not follow that module's dependencies for them. Importing the package
// registers the integration "leaderworkerset.x-k8s.io/leaderworkerset".
package leaderworkerset
