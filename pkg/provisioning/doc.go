// Package provisioning runs Berth's own admission check,
// berth.dev/provisioning-request: once a ClusterQueue has reserved quota
// for a workload, it asks the cluster autoscaler for the nodes of the
// workload's pods with a ProvisioningRequest (autoscaling.x-k8s.io/v1),
// and says the check is Ready once they are provisioned, so that the
// workload is admitted and its pods, marked to use them, are created.
//
// The request of a reservation is named after the workload, the check and
// the workload's requeue count, so that a controller that restarts at any
// moment finds the request it made instead of making a second. A failed
// request makes the check ask to Retry, after a backoff, as many times as
// the ProvisioningRequestConfig's retryStrategy allows, and then Rejected;
// capacity revoked makes it Retry; a booking that expired before the
// workload was admitted too. The requests of a workload are deleted when it
// finishes, and those of a reservation it lost when it goes back to the
// queue (failed ones stay until it finishes: they count its attempts).
//
// +kubebuilder:rbac:groups=berth.dev,resources=admissionchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=admissionchecks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=berth.dev,resources=provisioningrequestconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/finalizers,verbs=update
package provisioning
