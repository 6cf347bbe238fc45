// Package engine is the folder of Berth's decision packages: the ones that
// read API objects and return decisions, and never talk to the API server.
//
//   - resources: quantities per flavor and resource, and their arithmetic.
//   - workload: a Workload's state, its requests and its transitions.
//   - cache: the quota tree of ClusterQueues and Cohorts, and its snapshots.
//   - queue: the pending workloads of each ClusterQueue, in order.
//   - scheduler, with flavorassigner and preemption: the admission cycle.
//   - audit: what runs compared with what each ClusterQueue admitted.
//
// The controllers in pkg/controller feed them, and pkg/applier and
// pkg/workloadwriter write what they decide. No package under engine may
// depend on controller-runtime, client-go or a generated clientset, even
// indirectly: imports_test.go fails when one does. This package itself
// holds no code.
package engine
