package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/controllermanager"
	"github.com/berth-dev/berth/pkg/engine/queue"
	"github.com/berth-dev/berth/pkg/engine/workload"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestFairSharingReportsWeightedShares runs a manager with fair sharing on:
// a queue of weight 2 that borrows 2 of its cohort's 8 CPUs reports a
// weighted share of 125 (2/8, per mille, halved), its lender 0.
func TestFairSharingReportsWeightedShares(t *testing.T) {
	withManager(t, func(o *controllermanager.Options) { o.FairSharing = true })
	flavor := unique("flavor")
	cohort := unique("cohort")
	cpu := func(name, nominal string) *utiltesting.ClusterQueueWrapper {
		return utiltesting.MakeClusterQueue(name).Cohort(cohort).ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).Resource("cpu", nominal).Obj())
	}
	borrower, lender := cpu(unique("borrower"), "2").Weight("2"), cpu(unique("lender"), "6")
	ns := namespace(t, nil)
	mustCreate(t, utiltesting.MakeResourceFlavor(flavor), borrower.Obj(), lender.Obj(), utiltesting.MakeLocalQueue("main", ns, borrower.Name))
	mustCreate(t, utiltesting.MakeWorkload("big", ns).Queue("main").PodSets(*utiltesting.MakePodSet("main", 4).Request("cpu", "1").Obj()).Obj())

	for name, want := range map[string]int64{borrower.Name: 125, lender.Name: 0} {
		waitForClusterQueue(t, name, func(cq *berthv1alpha1.ClusterQueue) error {
			if cq.Status.FairSharing == nil || cq.Status.FairSharing.WeightedShare != want {
				return fmt.Errorf("status.fairSharing %+v, want a weighted share of %d", cq.Status.FairSharing, want)
			}
			if c := meta.FindStatusCondition(cq.Status.Conditions, berthv1alpha1.ConditionUnusedSettings); c != nil {
				return fmt.Errorf("with fair sharing on, %s says %q", c.Type, c.Message)
			}
			return nil
		})
	}
}

// TestSettingsOfDisabledFeaturesAreNamed: with fair sharing and admission
// fair sharing off (the default manager), a Cohort's and a ClusterQueue's
// spec.fairSharing, a ClusterQueue's admissionScope and a LocalQueue's
// spec.fairSharing have no effect: each says so in a Warning event naming
// the field and the setting that turns it on, and the queues in their
// UnusedSettings condition too, which goes once the fields do. A
// ClusterQueue's concurrentAdmissionPolicy, Kueue's, is accepted and said
// to have no effect.
func TestSettingsOfDisabledFeaturesAreNamed(t *testing.T) {
	flavor, cohortName := unique("flavor"), unique("cohort")
	cohort := &berthv1alpha1.Cohort{ObjectMeta: metav1.ObjectMeta{Name: cohortName}}
	cohort.Spec.FairSharing = &berthv1alpha1.FairSharing{Weight: ptr.To(resource.MustParse("2"))}
	cq := utiltesting.MakeClusterQueue(unique("cq")).Cohort(cohortName).Weight("3").AdmissionFairSharing().
		ResourceGroup(utiltesting.MakeFlavorQuotas(flavor).Resource("cpu", "4").Obj()).Obj()
	cq.Spec.ConcurrentAdmissionPolicy = &berthv1alpha1.ConcurrentAdmissionPolicy{Migration: berthv1alpha1.ConcurrentAdmissionMigration{Mode: "TryPreferredFlavors"}}
	ns := namespace(t, nil)
	lq := utiltesting.MakeLocalQueue("main", ns, cq.Name)
	lq.Spec.FairSharing = &berthv1alpha1.FairSharing{Weight: ptr.To(resource.MustParse("2"))}
	mustCreate(t, utiltesting.MakeResourceFlavor(flavor), cohort, cq, lq)

	waitForClusterQueue(t, cq.Name, func(cq *berthv1alpha1.ClusterQueue) error {
		c := meta.FindStatusCondition(cq.Status.Conditions, berthv1alpha1.ConditionUnusedSettings)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != berthv1alpha1.ReasonFeatureDisabled ||
			!contains(c.Message, "spec.fairSharing has no effect: fair sharing is off in the controller configuration (set fairSharing.enable: true") ||
			!contains(c.Message, "spec.admissionScope has no effect: admission fair sharing is off") ||
			!contains(c.Message, "spec.concurrentAdmissionPolicy has no effect: Berth admits a workload once") {
			return fmt.Errorf("UnusedSettings = %+v, want the three fields named", c)
		}
		return nil
	})
	waitForLocalQueue(t, ns, "main", func(lq *berthv1alpha1.LocalQueue) error {
		if c := meta.FindStatusCondition(lq.Status.Conditions, berthv1alpha1.ConditionUnusedSettings); c == nil || !contains(c.Message, "add an admissionFairSharing section") {
			return fmt.Errorf("UnusedSettings = %+v, want spec.fairSharing named", c)
		}
		return nil
	})
	waitForEvent(t, "", cohortName, berthv1alpha1.ReasonFeatureDisabled, "spec.fairSharing has no effect: fair sharing is off")
	waitForEvent(t, "", cq.Name, berthv1alpha1.ReasonFeatureDisabled, "spec.admissionScope has no effect")
	waitForEvent(t, ns, "main", berthv1alpha1.ReasonFeatureDisabled, "spec.fairSharing has no effect: admission fair sharing is off")

	cur := &berthv1alpha1.ClusterQueue{}
	if err := server.Client.Get(ctxFor(t), client.ObjectKeyFromObject(cq), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.FairSharing, cur.Spec.AdmissionScope, cur.Spec.ConcurrentAdmissionPolicy = nil, nil, nil
	if err := server.Client.Update(ctxFor(t), cur); err != nil {
		t.Fatal(err)
	}
	waitForClusterQueue(t, cq.Name, func(cq *berthv1alpha1.ClusterQueue) error {
		if c := meta.FindStatusCondition(cq.Status.Conditions, berthv1alpha1.ConditionUnusedSettings); c != nil {
			return fmt.Errorf("UnusedSettings = %+v after the fields went, want none", c)
		}
		return nil
	})
}

// TestAdmissionFairSharingServesTheLighterLocalQueue runs a manager with
// admission fair sharing, samples every second: two LocalQueues share a
// ClusterQueue of 4 CPUs. heavy has run a 4-CPU job, which its status
// shows; then heavy queues a job of high priority and light one of none,
// later. The controller is restarted meanwhile: the usage in heavy's
// status is where it starts from (it samples no more before the end). When heavy's first job finishes, light's
// job is admitted, and heavy's waits, saying why.
func TestAdmissionFairSharingServesTheLighterLocalQueue(t *testing.T) {
	afs := func(o *controllermanager.Options) {
		o.AdmissionFairSharing = &queue.AdmissionFairSharing{HalfLife: time.Hour, Interval: time.Second}
	}
	stopManager()
	if err := startManager(afs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopManager()
		if err := startManager(); err != nil {
			t.Errorf("restoring the default manager: %v", err)
		}
	})
	flavor, cq := unique("flavor"), utiltesting.MakeClusterQueue(unique("shared")).AdmissionFairSharing().
		ResourceGroup(utiltesting.MakeFlavorQuotas(unique("flavor")).Resource("cpu", "4").Obj()).Obj()
	cq.Spec.ResourceGroups[0].Flavors[0].Name = berthv1alpha1.ResourceFlavorReference(flavor)
	cq.Spec.NamespaceSelector = &metav1.LabelSelector{}
	ns := namespace(t, nil)
	high := utiltesting.MakeWorkloadPriorityClass(unique("high"), 1000)
	mustCreate(t, utiltesting.MakeResourceFlavor(flavor), cq, high,
		utiltesting.MakeLocalQueue("heavy", ns, cq.Name), utiltesting.MakeLocalQueue("light", ns, cq.Name))

	first := utiltesting.MakeJob("first", ns).Queue("heavy").Request("cpu", "4").Obj()
	mustCreate(t, first)
	workloadOf(t, first, "heavy's first job admitted", admitted)
	heavy := &berthv1alpha1.LocalQueue{}
	waitFor(t, "heavy's usage in its status", func(ctx context.Context) error {
		if err := server.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "heavy"}, heavy); err != nil {
			return err
		}
		fs := heavy.Status.FairSharing
		if fs == nil || fs.AdmissionFairSharingStatus == nil || fs.AdmissionFairSharingStatus.LastUpdate.IsZero() || fs.WeightedShare == 0 {
			return fmt.Errorf("status.fairSharing %+v, want a sampled usage", fs)
		}
		if cpu := fs.AdmissionFairSharingStatus.ConsumedResources[corev1.ResourceCPU]; cpu.Sign() <= 0 {
			return fmt.Errorf("consumed cpu %s, want some", cpu.String())
		}
		return nil
	})
	t.Logf("heavy's usage after its first job ran: %+v", heavy.Status.FairSharing)

	urgent := utiltesting.MakeJob("urgent", ns).Queue("heavy").PriorityClass(high.Name).Request("cpu", "4").Obj()
	mustCreate(t, urgent)
	workloadOf(t, urgent, "heavy's urgent job pending", pendingWith("does not fit"))
	late := utiltesting.MakeJob("late", ns).Queue("light").Request("cpu", "4").Obj()
	mustCreate(t, late)
	workloadOf(t, late, "light's job pending", pendingWith("does not fit"))

	// Restarted to sample only hourly: what orders the queues now is the
	// usage restored from heavy's status.
	stopManager()
	if err := startManager(func(o *controllermanager.Options) {
		o.AdmissionFairSharing = &queue.AdmissionFairSharing{HalfLife: time.Hour, Interval: time.Hour}
	}); err != nil {
		t.Fatal(err)
	}
	finishJob(t, jobState(t, first, false))
	workloadOf(t, late, "light's job admitted first", admitted)
	wl := workloadOf(t, urgent, "heavy's urgent job waiting, saying why", pendingWith("LocalQueue heavy's recent usage, weighted, is"))
	t.Logf("heavy's urgent job: %s", workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved).Message)
}
