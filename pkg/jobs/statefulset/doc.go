// Package statefulset integrates StatefulSets: the replicas of a
// StatefulSet labelled berth.dev/queue-name are one pod group, admitted
// together, whose Workload the StatefulSet owns. The package holds only a
// webhook that hands the StatefulSet's queue and priority labels down to
// its pod template and names the group after it; the pod integration
// (pkg/jobs/pod) does the rest, and must be enabled with it. A StatefulSet
// that another controller owns, such as a LeaderWorkerSet's, is left to
// that controller's integration. Importing the package registers the
// integration "statefulset".
package statefulset
