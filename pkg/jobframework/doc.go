// Package jobframework lets Berth admit the jobs of any framework as
// Workloads. A framework implements GenericJob in a small package of its
// own (see pkg/jobs/job) and registers an Integration; the generic
// JobReconciler does the rest: it creates the job's Workload, keeps its
// queue and priority in step with the job's labels, runs the job with the
// admitted flavors' scheduling directives, stops it on eviction and
// finishes the Workload when the job ends.
//
// It must not decide admission; it follows the Workload's conditions.
package jobframework
