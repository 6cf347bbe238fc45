package dashboard

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// pageSize is how many workloads a queue's page lists: with 50,000
// workloads a page stays a page.
const pageSize = 50

// foldAt is how many ClusterQueues the first page shows in full; above
// it, each cohort is one line and its queues are a page of their own.
const foldAt = 30

// overview is the dashboard's first page: the cohort tree, each cohort with
// its ClusterQueues' quota bars and counts (or, in a large cluster, folded
// to one line), and the latest happenings.
type overview struct {
	Cohorts []cohortView
	Feed    []Happening
	Total   struct{ Queues, Pending, Admitted int }
	Folded  bool
	// LocalQueues stand in for the cohorts when the user may not read
	// ClusterQueues.
	LocalQueues []localQueueView
}

// cohortView is a cohort: its counts, and its queues unless folded.
type cohortView struct {
	Name, Parent                             string
	QueueCount, Pending, Admitted, Borrowing int
	Queues                                   []queueView
	// Page and Pages number the pages of Queues on the cohort's own page.
	Page, Pages int
	// Charts, on the cohort's own page, are its ClusterQueues' usage and
	// waiting workloads over time, together.
	Charts *queueCharts
}

type queueView struct {
	Name              string
	Pending, Admitted int
	Inactive          string
	Bars              []bar
}

type localQueueView struct {
	Namespace, Name, ClusterQueue string
	Pending, Admitted             int
}

// bar is one flavor and resource of a queue: its nominal quota, and of it
// what the queue uses, what it borrows beyond it, and what others borrow of
// its unused quota (lent), as quantities and as shares of the bar.
type bar struct {
	Flavor, Resource              string
	Nominal, Used, Borrowed, Lent string
	UsedPct, BorrowedPct, LentPct float64
}

// queuePage is one ClusterQueue: its waiting workloads in order, and those
// admitted, a page of each, and what happened to them.
type queuePage struct {
	Name     string
	Bars     []bar
	Pending  []pendingView
	Admitted []admittedView
	Feed     []Happening
	// Page and Pages number the pages of the pending list, from 1.
	Page, Pages   int
	PendingTotal  int
	AdmittedTotal int
	Known         bool
	// OwnOnly is set when the reader may not read ClusterQueues: the page
	// lists the workloads of the LocalQueues it may read, without the
	// queue's quota and charts.
	OwnOnly bool
	// Charts are its usage and its waiting workloads over time.
	Charts queueCharts
}

type pendingView struct {
	Position  int
	Namespace string
	Name      string
	Priority  int32
	Message   string
	Requests  string
}

type admittedView struct {
	Namespace, Name, Flavors, Since string
	Priority                        int32
}

// Happening is an admission, preemption or eviction, as a watch saw it.
type Happening struct {
	At                        time.Time
	Kind, Namespace, Name, CQ string
	Detail                    string
}

// counts are the waiting and admitted workloads per ClusterQueue.
type counts struct{ pending, admitted map[string]int }

func countsOf(cl *Cluster, positions map[string]Position) counts {
	c := counts{pending: map[string]int{}, admitted: map[string]int{}}
	for _, p := range positions {
		c.pending[p.ClusterQueue]++
	}
	for _, wl := range cl.Workloads {
		if admittedIn(wl) != "" {
			c.admitted[admittedIn(wl)]++
		}
	}
	return c
}

// admittedIn is the ClusterQueue that holds quota for wl, "" if none does.
func admittedIn(wl *berthv1alpha1.Workload) string {
	if !workload.HasQuotaReservation(wl) || workload.IsFinished(wl) {
		return ""
	}
	return string(wl.Status.Admission.ClusterQueue)
}

// buildOverview renders the cluster into the first page.
func buildOverview(cl *Cluster, feed []Happening) overview {
	out := overview{Feed: feed, Folded: len(cl.ClusterQueues) > foldAt}
	positions := cl.Positions()
	n := countsOf(cl, positions)
	if cl.QueuesUnknown {
		out.LocalQueues = localQueueViews(cl, positions)
		return out
	}
	lent := cl.lent()
	for _, g := range cl.ByCohort() {
		cv := cohortView{Name: g.Name, Parent: g.Parent, QueueCount: len(g.Queues)}
		for _, cq := range g.Queues {
			q := queueOf(cq, n, lent)
			cv.Pending += q.Pending
			cv.Admitted += q.Admitted
			if borrowing(cq) {
				cv.Borrowing++
			}
			if !out.Folded {
				cv.Queues = append(cv.Queues, q)
			}
		}
		out.Total.Queues += cv.QueueCount
		out.Total.Pending += cv.Pending
		out.Total.Admitted += cv.Admitted
		out.Cohorts = append(out.Cohorts, cv)
	}
	return out
}

// buildCohortPage renders one cohort's ClusterQueues, page page of them.
func buildCohortPage(cl *Cluster, name string, page int) (cohortView, bool) {
	for _, g := range cl.ByCohort() {
		if g.Name != name {
			continue
		}
		n, lent := countsOf(cl, cl.Positions()), cl.lent()
		cv := cohortView{Name: g.Name, Parent: g.Parent, QueueCount: len(g.Queues)}
		cv.Pages, cv.Page = pages(len(g.Queues), page)
		charts := chartsOf(cl, cl.Now, g.Queues...)
		cv.Charts = &charts
		for i, cq := range g.Queues {
			q := queueOf(cq, n, lent)
			cv.Pending += q.Pending
			cv.Admitted += q.Admitted
			if borrowing(cq) {
				cv.Borrowing++
			}
			if i/pageSize == cv.Page-1 {
				cv.Queues = append(cv.Queues, q)
			}
		}
		return cv, true
	}
	return cohortView{Name: name}, false
}

// pages is how many pages of pageSize total items make, and page kept
// within them.
func pages(total, page int) (int, int) {
	n := max(1, (total+pageSize-1)/pageSize)
	return n, min(max(page, 1), n)
}

func queueOf(cq *berthv1alpha1.ClusterQueue, n counts, lent map[berthv1alpha1.ClusterQueueReference]resources.Usage) queueView {
	q := queueView{Name: cq.Name, Pending: n.pending[cq.Name], Admitted: n.admitted[cq.Name], Bars: bars(cq, lent)}
	if c := findActive(cq); c != nil && c.Status == metav1.ConditionFalse {
		q.Inactive = c.Message
	}
	return q
}

func borrowing(cq *berthv1alpha1.ClusterQueue) bool {
	for _, fu := range cq.Status.FlavorsUsage {
		for _, r := range fu.Resources {
			if !r.Borrowed.IsZero() {
				return true
			}
		}
	}
	return false
}

func localQueueViews(cl *Cluster, positions map[string]Position) []localQueueView {
	pending, admitted := map[string]int{}, map[string]int{}
	for _, p := range positions {
		pending[workload.LocalQueueKey(p.Workload)]++
	}
	for _, wl := range cl.Workloads {
		if admittedIn(wl) != "" {
			admitted[workload.LocalQueueKey(wl)]++
		}
	}
	var out []localQueueView
	for _, key := range slices.Sorted(maps.Keys(cl.LocalQueues)) {
		lq := cl.LocalQueues[key]
		out = append(out, localQueueView{Namespace: lq.Namespace, Name: lq.Name, ClusterQueue: string(lq.Spec.ClusterQueue), Pending: pending[key], Admitted: admitted[key]})
	}
	return out
}

func findActive(cq *berthv1alpha1.ClusterQueue) *metav1.Condition {
	for i := range cq.Status.Conditions {
		if cq.Status.Conditions[i].Type == berthv1alpha1.ConditionActive {
			return &cq.Status.Conditions[i]
		}
	}
	return nil
}

// lent is, per ClusterQueue, flavor and resource, how much of its quota
// other queues use, as the engine's quota tree spreads it
// (cache.Snapshot.Lent), on the usage the ClusterQueues' status reports,
// which the bars show.
func (cl *Cluster) lent() map[berthv1alpha1.ClusterQueueReference]resources.Usage {
	c := cache.New()
	cl.LoadQuotaTree(c)
	cl.LoadStatusUsage(c)
	return c.Snapshot().Lent()
}

type frUse struct{ total, borrowed int64 }

func flavorUsage(cq *berthv1alpha1.ClusterQueue) map[resources.FlavorResource]frUse {
	out := map[resources.FlavorResource]frUse{}
	for _, fu := range cq.Status.FlavorsUsage {
		for _, r := range fu.Resources {
			out[resources.FlavorResource{Flavor: fu.Name, Resource: r.Name}] = frUse{total: resources.Value(r.Name, r.Total), borrowed: resources.Value(r.Name, r.Borrowed)}
		}
	}
	return out
}

// bars are a queue's quota bars, one per flavor and resource.
func bars(cq *berthv1alpha1.ClusterQueue, lent map[berthv1alpha1.ClusterQueueReference]resources.Usage) []bar {
	used := flavorUsage(cq)
	var out []bar
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				fr := resources.FlavorResource{Flavor: f.Name, Resource: r.Name}
				nominal, u, l := resources.Value(r.Name, r.NominalQuota), used[fr], lent[berthv1alpha1.ClusterQueueReference(cq.Name)][fr]
				// The bar is the nominal quota, or what is used if more.
				whole := max(nominal, u.total+l, 1)
				within := u.total - u.borrowed
				out = append(out, bar{
					Flavor: string(f.Name), Resource: string(r.Name),
					Nominal: resources.Format(r.Name, nominal), Used: resources.Format(r.Name, u.total),
					Borrowed: resources.Format(r.Name, u.borrowed), Lent: resources.Format(r.Name, l),
					UsedPct: pct(within, whole), BorrowedPct: pct(u.borrowed, whole), LentPct: pct(l, whole),
				})
			}
		}
	}
	return out
}

func pct(v, whole int64) float64 { return float64(v) * 100 / float64(whole) }

// buildQueuePage renders one ClusterQueue, page page of its waiting
// workloads, and the happenings of its workloads in feed.
func buildQueuePage(cl *Cluster, name string, page int, feed []Happening) queuePage {
	cq := cl.ClusterQueues[name]
	out := queuePage{Name: name, Page: 1, Pages: 1, OwnOnly: cl.QueuesUnknown}
	switch {
	case cq != nil:
		out.Bars = bars(cq, cl.lent())
		out.Charts = chartsOf(cl, cl.Now, cq)
	case !cl.QueuesUnknown || !cl.submitsTo(name):
		return out
	}
	out.Known = true
	var waiting []Position
	for _, p := range cl.Positions() {
		if p.ClusterQueue == name {
			waiting = append(waiting, p)
		}
	}
	slices.SortFunc(waiting, func(a, b Position) int { return a.Order() - b.Order() })
	out.PendingTotal = len(waiting)
	out.Pages, out.Page = pages(len(waiting), page)
	for _, p := range waiting[(out.Page-1)*pageSize : min(out.Page*pageSize, len(waiting))] {
		out.Pending = append(out.Pending, pendingView{
			Position: p.Order(), Namespace: p.Workload.Namespace, Name: p.Workload.Name, Priority: workload.Priority(p.Workload),
			Message: cmp.Or(WaitingMessage(p.Workload), "Waiting to be considered"), Requests: requestsText(p.Workload),
		})
	}
	for _, wl := range cl.Workloads {
		if admittedIn(wl) != name {
			continue
		}
		out.AdmittedTotal++
		since := ""
		if c := workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted); c != nil {
			since = c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		out.Admitted = append(out.Admitted, admittedView{Namespace: wl.Namespace, Name: wl.Name, Priority: workload.Priority(wl), Flavors: flavorsText(wl.Status.Admission), Since: since})
	}
	slices.SortFunc(out.Admitted, func(a, b admittedView) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	out.Admitted = out.Admitted[:min(len(out.Admitted), pageSize)]
	for _, h := range feed {
		if h.CQ == name {
			out.Feed = append(out.Feed, h)
		}
	}
	return out
}

// submitsTo reports whether a LocalQueue read submits to ClusterQueue cq.
func (cl *Cluster) submitsTo(cq string) bool {
	for _, lq := range cl.LocalQueues {
		if string(lq.Spec.ClusterQueue) == cq {
			return true
		}
	}
	return false
}

func requestsText(wl *berthv1alpha1.Workload) string {
	req := RequestsOf(wl)
	parts := make([]string, 0, len(req))
	for _, k := range slices.Sorted(maps.Keys(req)) {
		parts = append(parts, k+"="+req[k])
	}
	return strings.Join(parts, " ")
}

func flavorsText(adm *berthv1alpha1.Admission) string {
	seen := map[string]bool{}
	for _, psa := range adm.PodSetAssignments {
		for _, f := range psa.Flavors {
			seen[string(f)] = true
		}
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ", ")
}

// HappeningsOf compares two versions of a Workload and says what happened
// to it: admitted, preempted, evicted; none for other changes.
func HappeningsOf(old, cur *berthv1alpha1.Workload, at time.Time) []Happening {
	turned := func(typ string) *metav1.Condition {
		c := workload.FindCondition(cur, typ)
		if c == nil || c.Status != metav1.ConditionTrue {
			return nil
		}
		if old != nil {
			if o := workload.FindCondition(old, typ); o != nil && o.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return c
	}
	var out []Happening
	cq := ""
	if cur.Status.Admission != nil {
		cq = string(cur.Status.Admission.ClusterQueue)
	} else if old != nil && old.Status.Admission != nil {
		cq = string(old.Status.Admission.ClusterQueue)
	}
	if c := turned(berthv1alpha1.WorkloadAdmitted); c != nil {
		out = append(out, Happening{At: at, Kind: "admitted", Namespace: cur.Namespace, Name: cur.Name, CQ: cq, Detail: flavorsText(cur.Status.Admission)})
	}
	if c := turned(berthv1alpha1.WorkloadPreempted); c != nil {
		out = append(out, Happening{At: at, Kind: "preempted", Namespace: cur.Namespace, Name: cur.Name, CQ: cq, Detail: c.Message})
	} else if c := turned(berthv1alpha1.WorkloadEvicted); c != nil {
		out = append(out, Happening{At: at, Kind: "evicted", Namespace: cur.Namespace, Name: cur.Name, CQ: cq, Detail: fmt.Sprintf("%s: %s", c.Reason, c.Message)})
	}
	return out
}
