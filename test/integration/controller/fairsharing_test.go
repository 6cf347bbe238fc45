package controller

import (
	"fmt"
	"testing"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/manager"
	utiltesting "github.com/berth-dev/berth/pkg/util/testing"
)

// TestFairSharingReportsWeightedShares runs a manager with fair sharing on:
// a queue of weight 2 that borrows 2 of its cohort's 8 CPUs reports a
// weighted share of 125 (2/8, per mille, halved), its lender 0.
func TestFairSharingReportsWeightedShares(t *testing.T) {
	stopManager()
	if err := startManager(func(o *manager.Options) { o.FairSharing = true }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopManager()
		if err := startManager(); err != nil {
			t.Errorf("restoring the default manager: %v", err)
		}
	})
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
			return nil
		})
	}
}
