// Package jobset integrates JobSets (sigs.k8s.io/jobset): one podset per
// replicated job, of replicas times the job's parallelism pods, admitted
// together as one Workload. Importing it registers the integration
// "jobset.x-k8s.io/jobset".
package jobset
