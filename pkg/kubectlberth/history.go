package kubectlberth

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/dashboard"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/jobframework"
)

// HistoryList is the output of kubectl berth history: the job's
// Workloads.
type HistoryList struct {
	Workloads []History `json:"workloads"`
}

// History is what happened to one Workload, in order, and how long it
// spent in each state.
type History struct {
	Name         string         `json:"name"`
	ClusterQueue string         `json:"clusterQueue,omitempty"`
	State        string         `json:"state"`
	Events       []HistoryEntry `json:"events"`
	Spans        []StateSpan    `json:"spans"`
}

// HistoryEntry is one thing that happened: an event, or a condition's
// last change where its event is gone.
type HistoryEntry struct {
	Time time.Time `json:"time"`
	// State is the Workload's state once it happened.
	State string `json:"state"`
	// Reason is the event's reason, or the condition's type.
	Reason string `json:"reason"`
	// Object is what it happened to, as KIND NAME.
	Object  string `json:"object"`
	Message string `json:"message,omitempty"`
	// Count is how many times an event was seen, when more than once.
	Count int32 `json:"count,omitempty"`
}

// StateSpan is a stretch of time in one state; the last has no end.
type StateSpan struct {
	State   string     `json:"state"`
	From    time.Time  `json:"from"`
	To      *time.Time `json:"to,omitempty"`
	Seconds *int64     `json:"seconds,omitempty"`
}

func (o *options) historyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history (job|jobset|pod|workload)/NAME",
		Short: "What happened to a job's Workload, in order, and how long it spent waiting, admitted and stopping",
		Long: `The timeline of a job's Workload: its creation, quota reserved, admission checks,
admission, preemptions (by whom) and evictions, requeues and its end, from the events
Berth recorded on the Workload and its job and, for what the API server no longer keeps
(events live an hour by default), the last change of each of the Workload's conditions.
Then how long it spent in each state.`,
		Example: `  kubectl berth history job/train -n team-a
  kubectl berth history pod/worker-0 -n team-a -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.prepare()
			if err != nil {
				return err
			}
			name, err := workloadNameOf(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			h, err := history(cmd.Context(), c, types.NamespacedName{Namespace: ns, Name: name})
			if err != nil {
				return err
			}
			list := &HistoryList{Workloads: []History{*h}}
			if err := o.print(list, func(w io.Writer) error { return historyTable(w, h) }); err != nil || o.output != "table" {
				return err
			}
			// The states are a table of their own, with their own columns.
			w := printers.GetNewTabWriter(o.streams.Out)
			spansTable(w, h.Spans)
			return w.Flush()
		},
	}
}

// history reads the Workload key and the events on it and its owners.
func history(ctx context.Context, c client.Reader, key types.NamespacedName) (*History, error) {
	wl := &berthv1alpha1.Workload{}
	if err := c.Get(ctx, key, wl); err != nil {
		return nil, notFound(err, "Workload", key)
	}
	// Core events: what Berth records with the events API is read there
	// too, and every role that reads a namespace reads them.
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(key.Namespace)); err != nil {
		return nil, dashboard.ReadError(err)
	}
	h := &History{Name: wl.Name, ClusterQueue: string(workload.ClusterQueueOf(wl)), State: stateName(wl)}
	h.Events = historyEntries(wl, events.Items)
	h.Spans = stateSpans(h.Events)
	return h, nil
}

// historyEntries are the events on wl and on its owners, and the Workload's
// creation and conditions where no event of the same reason tells it.
func historyEntries(wl *berthv1alpha1.Workload, events []corev1.Event) []HistoryEntry {
	about := map[types.UID]string{wl.UID: "Workload " + wl.Name}
	for _, o := range wl.OwnerReferences {
		about[o.UID] = o.Kind + " " + o.Name
	}
	var out []HistoryEntry
	for i := range events {
		e := &events[i]
		object, ok := about[e.InvolvedObject.UID]
		if !ok {
			continue
		}
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.FirstTimestamp.Time
		}
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		entry := HistoryEntry{Time: at.UTC(), Reason: e.Reason, Object: object, Message: e.Message}
		if count := e.Count; e.Series != nil {
			entry.Count = e.Series.Count
		} else if count > 1 {
			entry.Count = count
		}
		out = append(out, entry)
	}
	told := func(reason string, at time.Time) bool {
		return slices.ContainsFunc(out, func(e HistoryEntry) bool {
			return e.Reason == reason && e.Time.Sub(at).Abs() <= 2*time.Second
		})
	}
	self := "Workload " + wl.Name
	if created := wl.CreationTimestamp.UTC(); !told(jobframework.EventCreatedWorkload, created) {
		out = append(out, HistoryEntry{Time: created, Reason: historyCreated, Object: self})
	}
	for _, t := range historyConditions {
		cond := workload.FindCondition(wl, t)
		if cond == nil || cond.Status != metav1.ConditionTrue || told(t, cond.LastTransitionTime.UTC()) {
			continue
		}
		out = append(out, HistoryEntry{Time: cond.LastTransitionTime.UTC(), Reason: t, Object: self, Message: cond.Reason + ": " + cond.Message})
	}
	slices.SortStableFunc(out, func(a, b HistoryEntry) int {
		// Conditions and some events tell the time to the second: within
		// one, a Workload's life goes in its order.
		if c := a.Time.Truncate(time.Second).Compare(b.Time.Truncate(time.Second)); c != 0 {
			return c
		}
		if c := lifeOrder(a.Reason) - lifeOrder(b.Reason); c != 0 {
			return c
		}
		return a.Time.Compare(b.Time)
	})
	state := ""
	for i := range out {
		if s, ok := entersState[out[i].Reason]; ok {
			state = s
		}
		out[i].State = state
	}
	return out
}

// lifeOrder is where a reason comes in a Workload's life, for entries of
// the same second: creation, quota, admission, the job's own events,
// eviction, requeue, the end.
func lifeOrder(reason string) int {
	switch reason {
	case historyCreated, jobframework.EventCreatedWorkload:
		return 0
	case berthv1alpha1.WorkloadQuotaReserved:
		return 1
	case berthv1alpha1.WorkloadAdmitted:
		return 2
	case berthv1alpha1.WorkloadEvicted, berthv1alpha1.WorkloadPreempted:
		return 4
	case berthv1alpha1.WorkloadRequeued:
		return 5
	case berthv1alpha1.WorkloadFinished:
		return 6
	}
	return 3
}

// historyCreated is the entry of a Workload's creation where its job's
// CreatedWorkload event is gone, or it was created without a job.
const historyCreated = "Created"

// historyConditions are the Workload's conditions whose last change the
// history shows when its event is gone.
var historyConditions = []string{
	berthv1alpha1.WorkloadQuotaReserved, berthv1alpha1.WorkloadAdmitted, berthv1alpha1.WorkloadEvicted,
	berthv1alpha1.WorkloadPreempted, berthv1alpha1.WorkloadRequeued, berthv1alpha1.WorkloadFinished,
}

// entersState is the state each reason puts a Workload in; the other
// reasons leave it where it is.
var entersState = map[string]string{
	historyCreated:                      StatePending,
	jobframework.EventCreatedWorkload:   StatePending,
	berthv1alpha1.WorkloadRequeued:      StatePending,
	berthv1alpha1.WorkloadQuotaReserved: StateQuotaReserved,
	berthv1alpha1.WorkloadAdmitted:      StateAdmitted,
	berthv1alpha1.WorkloadEvicted:       StateEvicted,
	berthv1alpha1.WorkloadPreempted:     StateEvicted,
	berthv1alpha1.WorkloadFinished:      StateFinished,
}

// waiting are the states before an admission.
var waiting = map[string]bool{StatePending: true, StateQuotaReserved: true}

// stateSpans follows the entries through the states: each span ends where
// the next begins; the last, unless the Workload finished, is open.
func stateSpans(entries []HistoryEntry) []StateSpan {
	var spans []StateSpan
	for _, e := range entries {
		state, ok := entersState[e.Reason]
		if !ok || (len(spans) > 0 && spans[len(spans)-1].State == state) {
			continue
		}
		n := len(spans)
		if n > 0 && waiting[spans[n-1].State] && state != StateFinished &&
			spans[n-1].From.Truncate(time.Second).Equal(e.Time.Truncate(time.Second)) {
			// Created or requeued, quota reserved and admitted within a
			// second, which conditions do not tell apart: no wait.
			spans[n-1].State = state
			continue
		}
		if n > 0 {
			end := e.Time
			secs := int64(end.Sub(spans[n-1].From).Round(time.Second) / time.Second)
			spans[n-1].To, spans[n-1].Seconds = &end, &secs
		}
		if state == StateFinished {
			break
		}
		spans = append(spans, StateSpan{State: state, From: e.Time})
	}
	return spans
}

func historyTable(w io.Writer, h *History) error {
	where := ""
	if h.ClusterQueue != "" {
		where = " in ClusterQueue " + h.ClusterQueue
	}
	fmt.Fprintf(w, "Workload %s%s: %s\n\n", h.Name, where, h.State)
	row(w, "TIME", "WHAT", "ON", "STATE", "MESSAGE")
	for _, e := range h.Events {
		what := e.Reason
		if e.Count > 1 {
			what = fmt.Sprintf("%s (x%d)", e.Reason, e.Count)
		}
		row(w, e.Time.Format(time.RFC3339), what, e.Object, orDash(e.State), orDash(e.Message))
	}
	return nil
}

func spansTable(w io.Writer, spans []StateSpan) {
	fmt.Fprintln(w)
	row(w, "STATE", "FROM", "TO", "FOR")
	for _, s := range spans {
		to, took := "-", "(now)"
		if s.To != nil {
			to, took = s.To.Format(time.RFC3339), (time.Duration(*s.Seconds) * time.Second).String()
		}
		row(w, s.State, s.From.Format(time.RFC3339), to, took)
	}
}
