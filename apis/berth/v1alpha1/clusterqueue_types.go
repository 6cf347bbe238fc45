package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceGroups is the quota of a ClusterQueue or a Cohort: groups of
// resources, each with its flavors in order of preference.
//
// +listType=atomic
// +kubebuilder:validation:MaxItems=16
// +kubebuilder:validation:XValidation:rule="self.all(g, g.flavors.all(f, g.flavors.exists_one(x, x.name == f.name) && self.exists_one(h, h.flavors.exists(x, x.name == f.name))))",message="resourceGroups[].flavors[].name must be unique: a flavor appears once in the whole queue"
// +kubebuilder:validation:XValidation:rule="self.all(g, g.coveredResources.all(r, g.coveredResources.exists_one(x, x == r) && self.exists_one(h, r in h.coveredResources)))",message="resourceGroups[].coveredResources: a resource may appear in at most one resource group, once"
type ResourceGroups []ResourceGroup

// QueueingStrategy is how a ClusterQueue orders the workloads it admits.
//
// +kubebuilder:validation:Enum=StrictFIFO;BestEffortFIFO
type QueueingStrategy string

const (
	// StrictFIFO admits in order: a head that does not fit blocks the queue.
	StrictFIFO QueueingStrategy = "StrictFIFO"
	// BestEffortFIFO admits in order, but a head that does not fit is set
	// aside until something changes that could let it fit, and the next
	// workload is tried.
	BestEffortFIFO QueueingStrategy = "BestEffortFIFO"
)

// StopPolicy stops a queue from admitting.
//
// +kubebuilder:validation:Enum=None;Hold;HoldAndDrain
type StopPolicy string

const (
	// None admits as usual.
	None StopPolicy = "None"
	// Hold admits nothing new; admitted workloads keep running.
	Hold StopPolicy = "Hold"
	// HoldAndDrain admits nothing new and evicts admitted workloads.
	HoldAndDrain StopPolicy = "HoldAndDrain"
)

// PreemptionPolicy says which workloads may be preempted. Each field that
// holds one lists the values it accepts.
type PreemptionPolicy string

const (
	// PreemptionPolicyNever preempts nothing.
	PreemptionPolicyNever PreemptionPolicy = "Never"
	// PreemptionPolicyLowerPriority preempts workloads of lower priority.
	PreemptionPolicyLowerPriority PreemptionPolicy = "LowerPriority"
	// PreemptionPolicyLowerOrNewerEqualPriority also preempts workloads of
	// equal priority that entered the queue later.
	PreemptionPolicyLowerOrNewerEqualPriority PreemptionPolicy = "LowerOrNewerEqualPriority"
	// PreemptionPolicyAny preempts any workload of the cohort that uses
	// quota this queue lent.
	PreemptionPolicyAny PreemptionPolicy = "Any"
)

// ClusterQueuePreemption says which workloads a ClusterQueue's pending
// workloads may preempt to make room.
//
// +kubebuilder:validation:XValidation:rule="!has(self.borrowWithinCohort) || self.borrowWithinCohort.policy == 'Never' || self.reclaimWithinCohort != 'Never'",message="preemption.borrowWithinCohort may only be enabled when preemption.reclaimWithinCohort is not Never"
type ClusterQueuePreemption struct {
	// WithinClusterQueue is whom a pending workload that fits in the
	// queue's nominal quota may preempt in its own queue.
	//
	// +optional
	// +kubebuilder:default=Never
	// +kubebuilder:validation:Enum=Never;LowerPriority;LowerOrNewerEqualPriority
	WithinClusterQueue PreemptionPolicy `json:"withinClusterQueue,omitempty"`

	// ReclaimWithinCohort is whom a pending workload may preempt in other
	// queues of the cohort to take back quota this queue lent.
	//
	// +optional
	// +kubebuilder:default=Never
	// +kubebuilder:validation:Enum=Never;LowerPriority;Any
	ReclaimWithinCohort PreemptionPolicy `json:"reclaimWithinCohort,omitempty"`

	// BorrowWithinCohort is whom a pending workload that needs to borrow
	// may preempt in other queues of the cohort.
	//
	// +optional
	// +kubebuilder:default={}
	BorrowWithinCohort BorrowWithinCohort `json:"borrowWithinCohort,omitempty"`
}

// BorrowWithinCohort says whom a borrowing workload may preempt.
//
// +kubebuilder:validation:XValidation:rule="self.policy != 'Never' || !has(self.maxPriorityThreshold)",message="borrowWithinCohort.maxPriorityThreshold is only valid with policy LowerPriority"
type BorrowWithinCohort struct {
	// Policy is Never or LowerPriority.
	//
	// +optional
	// +kubebuilder:default=Never
	// +kubebuilder:validation:Enum=Never;LowerPriority
	Policy PreemptionPolicy `json:"policy,omitempty"`

	// MaxPriorityThreshold, when set, limits the victims to workloads whose
	// priority is at most this value.
	//
	// +optional
	MaxPriorityThreshold *int32 `json:"maxPriorityThreshold,omitempty"`
}

// FlavorFungibilityPolicy says whether flavor assignment stops at a flavor.
//
// +kubebuilder:validation:Enum=MayStopSearch;TryNextFlavor
type FlavorFungibilityPolicy string

const (
	// MayStopSearch takes the flavor.
	MayStopSearch FlavorFungibilityPolicy = "MayStopSearch"
	// TryNextFlavor tries the next flavor first.
	TryNextFlavor FlavorFungibilityPolicy = "TryNextFlavor"
)

// FlavorFungibilityPreference says which flavor is taken when none fits
// outright and the search went through them all.
//
// +kubebuilder:validation:Enum=BorrowingOverPreemption;PreemptionOverBorrowing
type FlavorFungibilityPreference string

const (
	// BorrowingOverPreemption takes a flavor that fits by borrowing before
	// one that needs preemption.
	BorrowingOverPreemption FlavorFungibilityPreference = "BorrowingOverPreemption"
	// PreemptionOverBorrowing takes a flavor that fits within the queue's
	// nominal quota by preempting before one that borrows, and one that
	// borrows before one that must borrow and preempt.
	PreemptionOverBorrowing FlavorFungibilityPreference = "PreemptionOverBorrowing"
)

// FlavorFungibility says what flavor assignment does when a flavor fits
// only by borrowing or by preempting.
//
// +kubebuilder:validation:XValidation:rule="!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",message="spec.flavorFungibility.preference may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor"
type FlavorFungibility struct {
	// WhenCanBorrow: MayStopSearch takes a flavor that fits by borrowing;
	// TryNextFlavor looks for a later flavor that fits without borrowing.
	//
	// +optional
	// +kubebuilder:default=MayStopSearch
	WhenCanBorrow FlavorFungibilityPolicy `json:"whenCanBorrow,omitempty"`

	// WhenCanPreempt: TryNextFlavor looks for a later flavor that fits
	// without preempting; MayStopSearch preempts in this flavor.
	//
	// +optional
	// +kubebuilder:default=TryNextFlavor
	WhenCanPreempt FlavorFungibilityPolicy `json:"whenCanPreempt,omitempty"`

	// Preference says which flavor is taken when none fits outright and
	// every flavor was tried (both policies above TryNextFlavor):
	// BorrowingOverPreemption (the default) or PreemptionOverBorrowing.
	// Earlier flavors first among equals.
	//
	// +optional
	Preference FlavorFungibilityPreference `json:"preference,omitempty"`
}

// ClusterQueueSpec is the quota and policy of a ClusterQueue.
//
// +kubebuilder:validation:XValidation:rule="(has(self.cohortName) && size(self.cohortName) > 0) || !has(self.resourceGroups) || self.resourceGroups.all(g, g.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit))))",message="spec.resourceGroups[].flavors[].resources[].borrowingLimit may only be set when spec.cohortName is set"
// +kubebuilder:validation:XValidation:rule="(has(self.cohortName) && size(self.cohortName) > 0) || !has(self.resourceGroups) || self.resourceGroups.all(g, g.flavors.all(f, f.resources.all(r, !has(r.lendingLimit))))",message="spec.resourceGroups[].flavors[].resources[].lendingLimit may only be set when spec.cohortName is set"
// +kubebuilder:validation:XValidation:rule="!(has(self.admissionChecks) && size(self.admissionChecks) > 0 && has(self.admissionChecksStrategy))",message="spec.admissionChecks and spec.admissionChecksStrategy may not both be set"
type ClusterQueueSpec struct {
	// ResourceGroups is the queue's quota.
	//
	// +optional
	ResourceGroups ResourceGroups `json:"resourceGroups,omitempty"`

	// CohortName is the cohort this queue belongs to. Queues of a cohort
	// lend each other their unused quota.
	//
	// +optional
	CohortName CohortReference `json:"cohortName,omitempty"`

	// QueueingStrategy orders the queue's pending workloads.
	//
	// +optional
	// +kubebuilder:default=BestEffortFIFO
	QueueingStrategy QueueingStrategy `json:"queueingStrategy,omitempty"`

	// NamespaceSelector selects the namespaces whose LocalQueues may submit
	// to this queue. Null selects none; {} selects all.
	//
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Preemption says whom this queue's workloads may preempt.
	//
	// +optional
	// +kubebuilder:default={}
	Preemption ClusterQueuePreemption `json:"preemption,omitempty"`

	// FlavorFungibility says when flavor assignment tries the next flavor.
	//
	// +optional
	// +kubebuilder:default={}
	FlavorFungibility FlavorFungibility `json:"flavorFungibility,omitempty"`

	// StopPolicy holds the queue: Hold admits nothing new, HoldAndDrain also
	// evicts the admitted workloads.
	//
	// +optional
	// +kubebuilder:default=None
	StopPolicy StopPolicy `json:"stopPolicy,omitempty"`

	// SchedulerName is the kube-scheduler profile that admitted pods are
	// handed to. Empty, the controller configuration's default applies.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SchedulerName string `json:"schedulerName,omitempty"`

	// FairSharing is the queue's weight in its cohort when fair sharing is
	// on.
	//
	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`

	// AdmissionScope orders the queue's pending workloads by the recent
	// usage of their LocalQueues when its mode is
	// UsageBasedAdmissionFairSharing and the controller configuration has
	// admissionFairSharing. Absent, by priority and age alone.
	//
	// +optional
	AdmissionScope *AdmissionScope `json:"admissionScope,omitempty"`

	// ConcurrentAdmissionPolicy is accepted, in Kueue's shape, so that
	// Kueue's manifests apply, and has no effect: Berth admits a workload
	// once, in the first flavor of the queue's order that fits, and does
	// not try several flavors at once nor move a running workload to a
	// better one. The queue's UnusedSettings condition says so.
	//
	// +optional
	ConcurrentAdmissionPolicy *ConcurrentAdmissionPolicy `json:"concurrentAdmissionPolicy,omitempty"`

	// AdmissionChecks are checks that every workload of the queue must
	// pass, once its quota is reserved, before it is admitted.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	AdmissionChecks []AdmissionCheckReference `json:"admissionChecks,omitempty"`

	// AdmissionChecksStrategy names checks that apply to the workloads
	// admitted in some flavors only. At most one of admissionChecks and
	// admissionChecksStrategy may be set.
	//
	// +optional
	AdmissionChecksStrategy *AdmissionChecksStrategy `json:"admissionChecksStrategy,omitempty"`
}

// ResourceUsage is the amount of one resource a queue uses.
type ResourceUsage struct {
	// Name is the resource.
	Name corev1.ResourceName `json:"name"`

	// Total is the amount in use, borrowed quota included.
	//
	// +optional
	Total resource.Quantity `json:"total,omitempty"`

	// Borrowed is the part of Total above the queue's nominal quota.
	//
	// +optional
	Borrowed resource.Quantity `json:"borrowed,omitempty"`
}

// FlavorUsage is what a queue uses of one flavor.
type FlavorUsage struct {
	// Name is the flavor.
	Name ResourceFlavorReference `json:"name"`

	// Resources is the usage per resource.
	//
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Resources []ResourceUsage `json:"resources"`
}

// ConcurrentAdmissionPolicy is Kueue's policy for admitting a workload in
// several flavors at once and moving it to a better one; Berth keeps it
// and does not act on it.
type ConcurrentAdmissionPolicy struct {
	// Migration says when a workload admitted in one flavor moves to a
	// more preferred one.
	Migration ConcurrentAdmissionMigration `json:"migration"`
}

// ConcurrentAdmissionMigration says when a workload moves to another
// flavor.
type ConcurrentAdmissionMigration struct {
	// Mode is TryPreferredFlavors (keep trying the flavors the queue
	// prefers, and move there) or RetainFirstAdmission (stay where first
	// admitted).
	//
	// +kubebuilder:validation:Enum=TryPreferredFlavors;RetainFirstAdmission
	Mode string `json:"mode"`

	// Constraints limit the flavors a workload may move to.
	//
	// +optional
	Constraints *ConcurrentAdmissionConstraints `json:"constraints,omitempty"`
}

// ConcurrentAdmissionConstraints limit where a workload may move.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.minPreferredFlavorName) && has(self.lastAcceptableFlavorName))",message="at most one of minPreferredFlavorName and lastAcceptableFlavorName"
type ConcurrentAdmissionConstraints struct {
	// MinPreferredFlavorName is the least preferred flavor, in the queue's
	// order, that a workload may move to.
	//
	// +optional
	MinPreferredFlavorName *ResourceFlavorReference `json:"minPreferredFlavorName,omitempty"`

	// LastAcceptableFlavorName is Kueue's other name for
	// MinPreferredFlavorName.
	//
	// +optional
	LastAcceptableFlavorName *ResourceFlavorReference `json:"lastAcceptableFlavorName,omitempty"`
}

// ClusterQueueStatus is what a ClusterQueue holds and uses.
type ClusterQueueStatus struct {
	// Conditions hold the Active condition.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// PendingWorkloads is the number of workloads waiting for quota.
	//
	// +optional
	PendingWorkloads int32 `json:"pendingWorkloads"`

	// ReservingWorkloads is the number of workloads holding quota.
	//
	// +optional
	ReservingWorkloads int32 `json:"reservingWorkloads"`

	// AdmittedWorkloads is the number of admitted workloads.
	//
	// +optional
	AdmittedWorkloads int32 `json:"admittedWorkloads"`

	// FlavorsReservation is the quota reserved per flavor.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	FlavorsReservation []FlavorUsage `json:"flavorsReservation,omitempty"`

	// FlavorsUsage is the quota used by admitted workloads per flavor.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	FlavorsUsage []FlavorUsage `json:"flavorsUsage,omitempty"`

	// FairSharing is the queue's share of what its cohort lends, while
	// fair sharing is on.
	//
	// +optional
	FairSharing *FairSharingStatus `json:"fairSharing,omitempty"`
}

// ClusterQueue is quota per flavor and resource, a preemption policy and
// membership of a cohort. Namespaces submit to it through LocalQueues.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cq
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Cohort",type=string,JSONPath=".spec.cohortName",description="The cohort the queue belongs to"
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=".spec.queueingStrategy",priority=1,description="The queueing strategy"
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=".status.pendingWorkloads",description="Workloads waiting for quota"
// +kubebuilder:printcolumn:name="Reserving",type=integer,JSONPath=".status.reservingWorkloads",priority=1,description="Workloads holding quota"
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=".status.admittedWorkloads",description="Admitted workloads"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type ClusterQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the queue's quota and policy.
	Spec ClusterQueueSpec `json:"spec,omitempty"`

	// Status is what the queue holds and uses.
	Status ClusterQueueStatus `json:"status,omitempty"`
}

// ClusterQueueList is a list of ClusterQueues.
//
// +kubebuilder:object:root=true
type ClusterQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ClusterQueues.
	Items []ClusterQueue `json:"items"`
}
