// Package job integrates batch/v1 Jobs: one podset of parallelism pods,
// partial admission down to the berth.dev/job-min-parallelism annotation.
// Importing it registers the integration "batch/job".
package job
