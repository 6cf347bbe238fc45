package testing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// ClusterQueueWrapper builds a ClusterQueue.
type ClusterQueueWrapper struct{ berthv1alpha1.ClusterQueue }

// MakeClusterQueue starts a ClusterQueue selecting all namespaces.
func MakeClusterQueue(name string) *ClusterQueueWrapper {
	return &ClusterQueueWrapper{berthv1alpha1.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       berthv1alpha1.ClusterQueueSpec{NamespaceSelector: &metav1.LabelSelector{}},
	}}
}

// Obj returns the built ClusterQueue.
func (c *ClusterQueueWrapper) Obj() *berthv1alpha1.ClusterQueue { return &c.ClusterQueue }

// Cohort sets spec.cohortName.
func (c *ClusterQueueWrapper) Cohort(name string) *ClusterQueueWrapper {
	c.Spec.CohortName = berthv1alpha1.CohortReference(name)
	return c
}

// Weight sets the queue's fair-sharing weight.
func (c *ClusterQueueWrapper) Weight(w string) *ClusterQueueWrapper {
	c.Spec.FairSharing = &berthv1alpha1.FairSharing{Weight: new(resource.MustParse(w))}
	return c
}

// AdmissionFairSharing orders the queue's workloads by their LocalQueue's
// recent usage.
func (c *ClusterQueueWrapper) AdmissionFairSharing() *ClusterQueueWrapper {
	c.Spec.AdmissionScope = &berthv1alpha1.AdmissionScope{AdmissionMode: berthv1alpha1.UsageBasedAdmissionFairSharing}
	return c
}

// Strategy sets spec.queueingStrategy.
func (c *ClusterQueueWrapper) Strategy(s berthv1alpha1.QueueingStrategy) *ClusterQueueWrapper {
	c.Spec.QueueingStrategy = s
	return c
}

// Preemption sets spec.preemption.
func (c *ClusterQueueWrapper) Preemption(p berthv1alpha1.ClusterQueuePreemption) *ClusterQueueWrapper {
	c.Spec.Preemption = p
	return c
}

// Fungibility sets spec.flavorFungibility.
func (c *ClusterQueueWrapper) Fungibility(f berthv1alpha1.FlavorFungibility) *ClusterQueueWrapper {
	c.Spec.FlavorFungibility = f
	return c
}

// StopPolicy sets spec.stopPolicy.
func (c *ClusterQueueWrapper) StopPolicy(p berthv1alpha1.StopPolicy) *ClusterQueueWrapper {
	c.Spec.StopPolicy = p
	return c
}

// ResourceGroup appends a resource group; its covered resources are those
// of the first flavor.
func (c *ClusterQueueWrapper) ResourceGroup(flavors ...berthv1alpha1.FlavorQuotas) *ClusterQueueWrapper {
	c.Spec.ResourceGroups = appendGroup(c.Spec.ResourceGroups, flavors)
	return c
}

func appendGroup(rgs berthv1alpha1.ResourceGroups, flavors []berthv1alpha1.FlavorQuotas) berthv1alpha1.ResourceGroups {
	rg := berthv1alpha1.ResourceGroup{Flavors: flavors}
	if len(flavors) > 0 {
		for _, r := range flavors[0].Resources {
			rg.CoveredResources = append(rg.CoveredResources, r.Name)
		}
	}
	return append(rgs, rg)
}

// FlavorQuotasWrapper builds the quota of one flavor.
type FlavorQuotasWrapper struct{ berthv1alpha1.FlavorQuotas }

// MakeFlavorQuotas starts the quota of flavor name.
func MakeFlavorQuotas(name string) *FlavorQuotasWrapper {
	return &FlavorQuotasWrapper{berthv1alpha1.FlavorQuotas{Name: berthv1alpha1.ResourceFlavorReference(name)}}
}

// Obj returns the built FlavorQuotas.
func (f *FlavorQuotasWrapper) Obj() berthv1alpha1.FlavorQuotas { return f.FlavorQuotas }

// Resource adds a resource with its nominal quota and, optionally, a
// borrowing limit and a lending limit ("" for absent).
func (f *FlavorQuotasWrapper) Resource(name, nominal string, limits ...string) *FlavorQuotasWrapper {
	rq := berthv1alpha1.ResourceQuota{Name: corev1.ResourceName(name), NominalQuota: resource.MustParse(nominal)}
	if len(limits) > 0 && limits[0] != "" {
		q := resource.MustParse(limits[0])
		rq.BorrowingLimit = &q
	}
	if len(limits) > 1 && limits[1] != "" {
		q := resource.MustParse(limits[1])
		rq.LendingLimit = &q
	}
	f.Resources = append(f.Resources, rq)
	return f
}

// CohortWrapper builds a Cohort.
type CohortWrapper struct{ berthv1alpha1.Cohort }

// MakeCohort starts a Cohort.
func MakeCohort(name string) *CohortWrapper {
	return &CohortWrapper{berthv1alpha1.Cohort{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Obj returns the built Cohort.
func (c *CohortWrapper) Obj() *berthv1alpha1.Cohort { return &c.Cohort }

// Parent sets spec.parentName.
func (c *CohortWrapper) Parent(name string) *CohortWrapper {
	c.Spec.ParentName = berthv1alpha1.CohortReference(name)
	return c
}

// ResourceGroup appends a resource group of the cohort's own quota.
func (c *CohortWrapper) ResourceGroup(flavors ...berthv1alpha1.FlavorQuotas) *CohortWrapper {
	c.Spec.ResourceGroups = appendGroup(c.Spec.ResourceGroups, flavors)
	return c
}

// MakeResourceFlavor builds a ResourceFlavor with optional taints.
func MakeResourceFlavor(name string, taints ...corev1.Taint) *berthv1alpha1.ResourceFlavor {
	return &berthv1alpha1.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       berthv1alpha1.ResourceFlavorSpec{NodeTaints: taints},
	}
}
