// Package controller holds the reconcilers of Berth's own kinds, one file
// each with its SetupWithManager: they keep the admission engine's cache
// (pkg/engine/cache) and queues (pkg/engine/queue) in step with ResourceFlavors,
// ClusterQueues, Cohorts, LocalQueues, WorkloadPriorityClasses and
// Workloads, write the queues' status, and evict the admitted workloads
// that must stop. Workload status goes through the Writer it is given
// (pkg/workloadwriter), with the transitions of pkg/engine/workload.
//
// It must not decide admission: every decision comes from pkg/engine/scheduler,
// and pkg/applier writes them. Predicates and event handlers here only
// filter and map keys.
//
// The RBAC markers below are the whole of what the controller manager may
// do; config/rbac/role.yaml is generated from them. The controller
// integration suite runs the manager as a service account bound to that
// role alone, with the API server's OwnerReferencesPermissionEnforcement
// on: a Workload is owned by its job with blockOwnerDeletion, which only
// who may update the job's finalizers may set.
//
// +kubebuilder:rbac:groups=berth.dev,resources=resourceflavors;topologies;cohorts;localqueues;workloadpriorityclasses;admissionchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues/status;localqueues/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs/status,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets/status,verbs=get
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs/status,verbs=get
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/status,verbs=get
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=get
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes;clustertrainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=limitranges,verbs=get;list;watch
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=get
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=berth-system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=berth-system,resources=leases,verbs=get;update,resourceNames=berth.dev
package controller
