package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/resources"
	"github.com/berth-dev/berth/pkg/engine/workload"
)

// The charts of the dashboard are drawn from the history the Workloads
// themselves hold, so that they are there when the page opens: when each
// was created, when it got its quota (QuotaReserved) and when it gave it
// back (Finished), and what its admission held. A workload evicted and
// waiting again has lost the start of its last admission from its
// conditions, and a Workload deleted took its history with it: the charts
// show what the Workloads still tell.

// chartBuckets is the number of points of a chart.
const chartBuckets = 60

// chartWindow is how far back a chart goes: to the first time it knows,
// a day at most, a minute at least.
func chartWindow(earliest, now time.Time) time.Time {
	start := now.Add(-time.Minute)
	if earliest.Before(start) {
		start = earliest
	}
	return maxTime(start, now.Add(-24*time.Hour))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// held is one admission as a Workload's conditions tell it: the quota it
// held per resource, all flavors together, from when to when (zero: still
// held).
type held struct {
	from, to time.Time
	usage    resources.Requests
}

// life is one Workload of a ClusterQueue: created, and its last admission
// when its conditions tell it.
type life struct {
	created time.Time
	admit   *held
}

// heldBy is the admission wl's conditions tell, nil when they tell none.
func heldBy(wl *berthv1alpha1.Workload) *held {
	if wl.Status.Admission == nil {
		return nil
	}
	reserved := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved)
	finished := workload.FindCondition(wl, berthv1alpha1.WorkloadFinished)
	switch {
	case reserved != nil && reserved.Status == metav1.ConditionTrue:
		h := &held{from: reserved.LastTransitionTime.Time, usage: workload.AdmissionUsage(wl.Status.Admission).ByResource()}
		if finished != nil && finished.Status == metav1.ConditionTrue {
			h.to = finished.LastTransitionTime.Time
		}
		return h
	case finished != nil && finished.Status == metav1.ConditionTrue && reserved != nil:
		// Released when it finished; reserved when the Admitted condition
		// last turned, which finishing does not change.
		if admitted := workload.FindCondition(wl, berthv1alpha1.WorkloadAdmitted); admitted != nil && !admitted.LastTransitionTime.After(finished.LastTransitionTime.Time) {
			return &held{from: admitted.LastTransitionTime.Time, to: finished.LastTransitionTime.Time, usage: workload.AdmissionUsage(wl.Status.Admission).ByResource()}
		}
	}
	return nil
}

// livesIn is every Workload of ClusterQueue cq the plugin may read: those
// admitted in it and those queued to it. All ClusterQueues' are read in
// one pass over the Workloads, once per load of the cluster.
func (cl *Cluster) livesIn(cq string) []life {
	cl.histories.once.Do(func() {
		cl.histories.byCQ = map[string][]life{}
		positions := cl.Positions()
		for _, wl := range cl.Workloads {
			in := ""
			if h := heldBy(wl); h != nil {
				in = string(wl.Status.Admission.ClusterQueue)
				cl.histories.byCQ[in] = append(cl.histories.byCQ[in], life{created: wl.CreationTimestamp.Time, admit: h})
			} else if p, queued := positions[workload.Key(wl)]; queued {
				cl.histories.byCQ[p.ClusterQueue] = append(cl.histories.byCQ[p.ClusterQueue], life{created: wl.CreationTimestamp.Time})
			}
		}
	})
	return cl.histories.byCQ[cq]
}

// queueCharts are the charts of a ClusterQueue's page, or a cohort's.
type queueCharts struct {
	// Usage has one chart per resource the queue has quota of: what its
	// admitted workloads held, against its nominal quota; above it, it
	// borrowed.
	Usage []template.HTML
	// Waiting is how many workloads waited, and Wait how long those
	// admitted at each time had waited, at the median and the 90th
	// percentile.
	Waiting, Wait template.HTML
}

// chartsOf draws the charts of ClusterQueues cqs together (one, or a
// cohort's) up to now.
func chartsOf(cl *Cluster, now time.Time, cqs ...*berthv1alpha1.ClusterQueue) queueCharts {
	var lives []life
	nominal := resources.Requests{}
	for _, cq := range cqs {
		lives = append(lives, cl.livesIn(cq.Name)...)
		for _, rg := range cq.Spec.ResourceGroups {
			for _, f := range rg.Flavors {
				for _, r := range f.Resources {
					nominal[r.Name] = resources.Add(nominal[r.Name], resources.Value(r.Name, r.NominalQuota))
				}
			}
		}
	}
	earliest := now
	for _, l := range lives {
		if l.created.Before(earliest) {
			earliest = l.created
		}
	}
	start := chartWindow(earliest, now)
	at := make([]time.Time, chartBuckets+1)
	for i := range at {
		at[i] = start.Add(time.Duration(float64(now.Sub(start)) * float64(i) / chartBuckets))
	}
	var out queueCharts
	for _, name := range chartResources(nominal) {
		quota := slices.Repeat([]float64{float64(nominal[name])}, len(at))
		out.Usage = append(out.Usage, lineChart(string(name)+" in use", at, func(v float64) string { return resources.Format(name, int64(v)) },
			series{"used", usedOver(lives, at, name)}, series{"nominal", quota}))
	}
	waiting, p50, p90 := waitingOver(lives, at)
	count := func(v float64) string { return fmt.Sprint(int64(v)) }
	seconds := func(v float64) string { return (time.Duration(v) * time.Second).String() }
	out.Waiting = lineChart("waiting workloads", at, count, series{"waiting", waiting})
	out.Wait = lineChart("wait before admission", at, seconds, series{"p50", p50}, series{"p90", p90})
	return out
}

// usedOver is how much of resource name the lives' admissions held at
// each time of at: each admission is added where it starts and taken off
// where it ends, O(n log k) for n lives and k times.
func usedOver(lives []life, at []time.Time, name corev1.ResourceName) []float64 {
	delta := make([]float64, len(at)+1)
	for _, l := range lives {
		if l.admit == nil || l.admit.usage[name] == 0 {
			continue
		}
		from, to := firstAtOrAfter(at, l.admit.from), len(at)
		if !l.admit.to.IsZero() {
			// Held at t while from <= t < to: up to the first time not
			// before to.
			to = firstAtOrAfter(at, l.admit.to)
		}
		delta[from] += float64(l.admit.usage[name])
		delta[to] -= float64(l.admit.usage[name])
	}
	return running(delta)
}

// firstAtOrAfter is the index of the first of the sorted times at that is
// not before t, len(at) when none.
func firstAtOrAfter(at []time.Time, t time.Time) int {
	i, _ := slices.BinarySearchFunc(at, t, func(a, t time.Time) int { return a.Compare(t) })
	return i
}

// running sums delta into the value at each index, dropping the last.
func running(delta []float64) []float64 {
	out := make([]float64, len(delta)-1)
	sum := 0.0
	for i := range out {
		sum += delta[i]
		out[i] = sum
	}
	return out
}

// chartResources are the resources to chart: GPUs and the like first, then
// cpu and memory, at most four.
func chartResources(nominal resources.Requests) []corev1.ResourceName {
	names := nominal.Names()
	slices.SortStableFunc(names, func(a, b corev1.ResourceName) int {
		return boolRank(strings.Contains(string(a), "/")) - boolRank(strings.Contains(string(b), "/"))
	})
	return names[:min(len(names), 4)]
}

func boolRank(extended bool) int {
	if extended {
		return 0
	}
	return 1
}

// waitingOver is how many of the lives waited at each time of at, and the
// median and 90th percentile of the waits, in seconds, of those admitted
// since the time before.
func waitingOver(lives []life, at []time.Time) (waiting, p50, p90 []float64) {
	delta := make([]float64, len(at)+1)
	waits := make([][]float64, len(at))
	for _, l := range lives {
		from, to := firstAtOrAfter(at, l.created), len(at)
		if l.admit != nil {
			// Waited at t while created <= t < admitted.
			to = firstAtOrAfter(at, l.admit.from)
			if i := to; i > 0 && i < len(at) {
				waits[i] = append(waits[i], l.admit.from.Sub(l.created).Seconds())
			}
		}
		if from < to {
			delta[from]++
			delta[to]--
		}
	}
	p50, p90 = make([]float64, len(at)), make([]float64, len(at))
	for i := range at {
		p50[i], p90[i] = percentile(waits[i], 0.5), percentile(waits[i], 0.9)
	}
	return running(delta), p50, p90
}

// percentile is the p-th of values (0 for none), by nearest rank.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	return values[min(len(values)-1, int(math.Ceil(p*float64(len(values))))-1)]
}

// series is one line of a chart.
type series struct {
	Name   string
	Values []float64
}

const chartWidth, chartHeight, chartLeft, chartBottom, chartTop = 560.0, 150.0, 70.0, 20.0, 20.0

// lineChart draws series over the times at as an SVG, scaled to the
// largest value, with the axes labelled by format and the times' ends.
func lineChart(title string, at []time.Time, format func(float64) string, lines ...series) template.HTML {
	top := 0.0
	for _, s := range lines {
		for _, v := range s.Values {
			top = math.Max(top, v)
		}
	}
	if top == 0 {
		top = 1
	}
	plotW, plotH := chartWidth-chartLeft-10, chartHeight-chartBottom-chartTop
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f"><title>%s</title>`,
		chartWidth, chartHeight, chartWidth, chartHeight, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text class="chart-title" x="%.0f" y="10">%s</text>`, chartLeft, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.0f" text-anchor="end">%s</text>`, chartLeft-4, chartTop+4, template.HTMLEscapeString(format(top)))
	fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.0f" text-anchor="end">0</text>`, chartLeft-4, chartTop+plotH)
	fmt.Fprintf(&b, `<line class="axis" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/><line class="axis" x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f"/>`,
		chartLeft, chartTop, chartLeft, chartTop+plotH, chartLeft, chartTop+plotH, chartLeft+plotW, chartTop+plotH)
	if len(at) > 1 {
		fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.0f">%s</text>`, chartLeft, chartHeight-4, at[0].UTC().Format("Jan 2 15:04:05"))
		fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.0f" text-anchor="end">%s</text>`, chartLeft+plotW, chartHeight-4, at[len(at)-1].UTC().Format("15:04:05 MST"))
	}
	for i, s := range lines {
		var points []string
		for j, v := range s.Values {
			// A point between two of the same value adds nothing.
			if j > 0 && j < len(s.Values)-1 && v == s.Values[j-1] && v == s.Values[j+1] {
				continue
			}
			x := chartLeft + plotW*float64(j)/float64(max(1, len(s.Values)-1))
			points = append(points, fmt.Sprintf("%.1f,%.1f", x, chartTop+plotH-plotH*v/top))
		}
		fmt.Fprintf(&b, `<polyline class="line line-%d %s" points="%s"><title>%s</title></polyline>`,
			i, template.HTMLEscapeString(s.Name), strings.Join(points, " "), template.HTMLEscapeString(s.Name))
		fmt.Fprintf(&b, `<text class="legend line-%d" x="%.0f" y="10">%s</text>`, i, chartLeft+plotW-70*float64(len(lines)-i), template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	//nolint:gosec // every text in it is escaped above; the rest is numbers
	return template.HTML(b.String())
}
