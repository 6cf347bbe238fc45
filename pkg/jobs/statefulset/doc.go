// Package statefulset integrates StatefulSets: the replicas of a
// StatefulSet labelled berth.dev/queue-name are one pod group, admitted
// together, whose Workload the StatefulSet owns. The package holds a
// webhook that hands the StatefulSet's queue and priority labels down to
// its pod template and names the group after it, and the GroupOwner
// (group.go) that sizes the group by the StatefulSet's replicas and
// follows their changes; the pod integration (pkg/jobs/pod) holds and
// admits the pods, and must be enabled with it. A StatefulSet
// that another controller owns, such as a LeaderWorkerSet's, is left to
// that controller's integration. Importing the package registers the
// integration "statefulset".
package statefulset
