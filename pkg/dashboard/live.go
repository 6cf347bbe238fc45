package dashboard

import (
	"context"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

const (
	// feedLength is how many happenings a Feed keeps.
	feedLength = 100
	// coalesce is how long changes gather before the pages are told: a
	// drain of thousands of workloads is a few refreshes, not thousands.
	coalesce = 500 * time.Millisecond
)

// Feed is what the watches behind the pages report: a count of the
// changes, the latest happenings, and the pages that follow them, told at
// most once per coalesce.
type Feed struct {
	mu sync.Mutex
	// ring holds the latest happenings, the newest at next-1: the
	// controller's informers report to a Feed, and an admission costs a
	// copy of one, not of the whole feed.
	ring        [feedLength]Happening
	next, held  int
	subscribers map[chan struct{}]struct{}
	// generation counts the changes; told is the last one the subscribers
	// were told of.
	generation, told uint64
}

// NewFeed is an empty feed; Run tells its subscribers.
func NewFeed() *Feed {
	return &Feed{subscribers: map[chan struct{}]struct{}{}}
}

// Handler is the event handler for an informer of obj's kind: every event
// is a change, and a Workload's updates are compared for what happened.
func (f *Feed) Handler(obj client.Object) toolscache.ResourceEventHandler {
	funcs := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f.changed(nil) },
		UpdateFunc: func(any, any) { f.changed(nil) },
		DeleteFunc: func(any) { f.changed(nil) },
	}
	if _, ok := obj.(*berthv1alpha1.Workload); ok {
		funcs.UpdateFunc = func(old, cur any) {
			o, ok1 := old.(*berthv1alpha1.Workload)
			c, ok2 := cur.(*berthv1alpha1.Workload)
			if ok1 && ok2 {
				f.changed(HappeningsOf(o, c, time.Now()))
			}
		}
	}
	return funcs
}

// changed notes a change and what happened, newest first.
func (f *Feed) changed(happened []Happening) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.generation++
	for _, h := range happened {
		f.ring[f.next] = h
		f.next = (f.next + 1) % feedLength
		f.held = min(f.held+1, feedLength)
	}
}

// happenings are those of namespace ns ("" for all), newest first, and
// the generation they are of.
func (f *Feed) happenings(ns string) ([]Happening, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Happening
	for i := 1; i <= f.held; i++ {
		if h := f.ring[(f.next-i+feedLength)%feedLength]; ns == "" || h.Namespace == ns {
			out = append(out, h)
		}
	}
	return out, f.generation
}

// Run tells the subscribers of the changes, at most once per coalesce,
// until ctx ends.
func (f *Feed) Run(ctx context.Context) {
	tick := time.NewTicker(coalesce)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.mu.Lock()
		if f.told != f.generation {
			f.told = f.generation
			for ch := range f.subscribers {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
		f.mu.Unlock()
	}
}

func (f *Feed) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribers[ch] = struct{}{}
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subscribers, ch)
	}
}

// Live is a Source that reads the cluster through a reader of informers'
// stores whose events reach its Feed: it loads the cluster again only
// after a change.
type Live struct {
	feed   *Feed
	reader client.Reader
	// namespace and fallback are Load's: "" for every namespace, and the
	// namespace read when the reader may not read them all.
	namespace, fallback string
	mu                  sync.Mutex
	// snap is the cluster loaded at generation snapGen.
	snap    *Cluster
	snapGen uint64
}

// Source reads through reader the namespace given ("" for all, or, when
// the reader may not, fallback), with the feed's happenings in it.
func (f *Feed) Source(reader client.Reader, namespace, fallback string) *Live {
	return &Live{feed: f, reader: reader, namespace: namespace, fallback: fallback}
}

// Subscribe follows the feed.
func (l *Live) Subscribe() (<-chan struct{}, func()) { return l.feed.subscribe() }

// Snapshot is the cluster as the stores hold it, and the happenings in
// the namespace read.
func (l *Live) Snapshot(ctx context.Context) (*Cluster, []Happening, error) {
	feed, generation := l.feed.happenings(l.namespace)
	l.mu.Lock()
	snap, fresh := l.snap, l.snapGen == generation
	l.mu.Unlock()
	if snap != nil && fresh {
		return snap, feed, nil
	}
	snap, err := Load(ctx, l.reader, l.namespace, l.fallback)
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	l.snap, l.snapGen = snap, generation
	l.mu.Unlock()
	return snap, feed, nil
}
