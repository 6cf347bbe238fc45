package applier

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
	"github.com/berth-dev/berth/pkg/engine/workload"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

const (
	// pendingFirstDelay is how long a new reason to wait is held before it
	// is written: most workloads of a busy queue are admitted within it,
	// and then nothing needs writing at all.
	pendingFirstDelay = 500 * time.Millisecond
	// pendingRefresh is how often the numbers of an unchanged reason are
	// rewritten. They change with every admission in the cohort; a person
	// reading them needs them fresh to the minute, not to the millisecond.
	pendingRefresh = 30 * time.Second
	// pendingWorkers write in parallel, so that one slow write does not
	// hold the others.
	pendingWorkers = 4
	// pendingWritesPerSecond bounds the writes of reasons to wait, burst
	// included. Admissions and evictions are what keep quota in use; when
	// thousands of workloads wait at once, their explanations come a little
	// later rather than take the API server from the decisions. Each costs
	// the API server as much as an admission: at 20 a second they were a
	// twelfth of the Workload writes of the perf baseline, which a busy
	// server takes at 300 to 500 a second on two cores.
	pendingWritesPerSecond = 10
)

// WaitReasons writes why workloads wait off the scheduler's path. It
// keeps the latest reason per workload and writes it after
// pendingFirstDelay, rewriting a reason whose numbers changed at most every
// pendingRefresh. It writes against the current object and never over a
// workload that holds quota or finished, so a late message cannot undo an
// admission, and it writes at most pendingWritesPerSecond.
type WaitReasons struct {
	client client.Reader
	writer workloadwriter.Writer
	queue  workqueue.TypedDelayingInterface[types.NamespacedName]
	// holdsQuota reports whether the scheduler holds quota for the workload
	// with key "namespace/name", possibly before the informers know.
	holdsQuota func(key string) bool
	limiter    *rate.Limiter

	mu      sync.Mutex
	latest  map[types.NamespacedName]pendingReason
	written map[types.NamespacedName]writtenReason
}

type pendingReason struct {
	reason, message string
	// behind, when set, is the workload of the same shape this one waits
	// behind; the message is made from its own when written.
	behind types.NamespacedName
	// strict says that behind is the head of a StrictFIFO queue.
	strict bool
}

type writtenReason struct {
	reason string
	at     time.Time
}

// NewWaitReasons returns a writer reading Workloads through c and
// writing through w; Start runs it. holdsQuota tells it which workloads the
// scheduler has admitted.
func NewWaitReasons(c client.Reader, w workloadwriter.Writer, holdsQuota func(key string) bool) *WaitReasons {
	return &WaitReasons{
		client:     c,
		writer:     w,
		holdsQuota: holdsQuota,
		limiter:    rate.NewLimiter(pendingWritesPerSecond, pendingWritesPerSecond),
		queue:      workqueue.NewTypedDelayingQueue[types.NamespacedName](),
		latest:     map[types.NamespacedName]pendingReason{},
		written:    map[types.NamespacedName]writtenReason{},
	}
}

// Set records why wl waits; the write follows.
func (w *WaitReasons) Set(wl *berthv1alpha1.Workload, reason, message string) {
	key := types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}
	if c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved); c != nil && c.Reason == reason && c.Message == message {
		return
	}
	w.mu.Lock()
	w.latest[key] = pendingReason{reason: reason, message: message}
	delay := pendingFirstDelay
	if last, ok := w.written[key]; ok && last.reason == reason {
		delay = max(delay, pendingRefresh-time.Since(last.at))
	}
	w.mu.Unlock()
	w.queue.AddAfter(key, delay)
}

// SetBehind records that wl waits behind head, a workload of its queue
// that does not fit: wl was set aside without being tried, as one of
// head's shape, or, with strict, as any workload behind the head of a
// StrictFIFO queue. Only a workload with no reason of its own is told so.
func (w *WaitReasons) SetBehind(wl, head *berthv1alpha1.Workload, strict bool) {
	if workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved) != nil {
		return
	}
	key := types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}
	w.mu.Lock()
	if _, ok := w.latest[key]; ok {
		w.mu.Unlock()
		return
	}
	w.latest[key] = pendingReason{reason: berthv1alpha1.ReasonPending, behind: types.NamespacedName{Namespace: head.Namespace, Name: head.Name}, strict: strict}
	w.mu.Unlock()
	w.queue.AddAfter(key, pendingFirstDelay)
}

// behindMessage says why a workload waits behind head, with head's numbers.
func (w *WaitReasons) behindMessage(ctx context.Context, head types.NamespacedName, strict bool) string {
	msg := fmt.Sprintf("Waiting behind workload %s, which needs as much quota, has no lower priority and does not fit", head)
	if strict {
		msg = fmt.Sprintf("Waiting behind workload %s, the head of its StrictFIFO ClusterQueue, which does not fit", head)
	}
	wl := &berthv1alpha1.Workload{}
	if err := w.client.Get(ctx, head, wl); err == nil {
		if c := workload.FindCondition(wl, berthv1alpha1.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
			msg += ": " + c.Message
		}
	}
	return msg
}

// Start writes until ctx ends.
func (w *WaitReasons) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range pendingWorkers {
		wg.Go(func() {
			for w.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
}

func (w *WaitReasons) processNext(ctx context.Context) bool {
	key, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(key)
	if err := w.write(ctx, key); err != nil {
		if apierrors.IsConflict(err) {
			// The object changed; look at it again.
			w.queue.AddAfter(key, 100*time.Millisecond)
			return true
		}
		ctrl.LoggerFrom(ctx).Error(err, "Writing why a workload waits", "workload", key)
	}
	return true
}

func (w *WaitReasons) write(ctx context.Context, key types.NamespacedName) error {
	w.mu.Lock()
	want, ok := w.latest[key]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	if err := w.limiter.Wait(ctx); err != nil {
		return err
	}
	// After the wait: the scheduler may have admitted it meanwhile, and a
	// message written now would make that admission's write conflict.
	if w.holdsQuota(key.String()) {
		w.forget(key)
		return nil
	}
	wl := &berthv1alpha1.Workload{}
	if err := w.client.Get(ctx, key, wl); err != nil {
		if apierrors.IsNotFound(err) {
			w.forget(key)
			return nil
		}
		return err
	}
	if workload.HasQuotaReservation(wl) || workload.IsFinished(wl) {
		w.forget(key)
		return nil
	}
	msg := want.message
	if want.behind.Name != "" {
		msg = w.behindMessage(ctx, want.behind, want.strict)
	}
	if _, err := workloadwriter.Apply(ctx, w.writer, wl, workload.SetPending(want.reason, msg)); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[key] = writtenReason{reason: want.reason, at: time.Now()}
	if w.latest[key] == want {
		delete(w.latest, key)
	}
	return nil
}

// Forget drops what is known of a workload that no longer waits.
func (w *WaitReasons) Forget(key types.NamespacedName) { w.forget(key) }

func (w *WaitReasons) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.latest, key)
	delete(w.written, key)
}
