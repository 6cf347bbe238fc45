package controller

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// statusInterval is the least time between two writes of one queue's
// status while only its counts and usage change. A busy queue's counts
// change with every admission; written each second, the statuses of a few
// dozen queues cost the API server as much as the admissions themselves.
const statusInterval = 5 * time.Second

// statusWritesPerSecond bounds such writes for all queues together, so
// that their cost does not grow with the number of queues: with a
// thousand busy queues, each one's counts are refreshed every 100 s or
// so rather than 200 writes a second taken from admissions.
const statusWritesPerSecond = 20

// statusPacer spaces the status writes of each queue by statusInterval,
// within a budget that all queues share.
type statusPacer struct {
	mu     sync.Mutex
	budget *rate.Limiter
	last   map[string]time.Time
	// booked is when a queue that found the budget spent may write: its
	// turn is reserved, so that waiting queues do not all retry at once.
	booked map[string]time.Time
}

// newStatusBudget is the budget the pacers of one controller share.
func newStatusBudget() *rate.Limiter {
	return rate.NewLimiter(statusWritesPerSecond, statusWritesPerSecond)
}

func newStatusPacer(budget *rate.Limiter) *statusPacer {
	return &statusPacer{budget: budget, last: map[string]time.Time{}, booked: map[string]time.Time{}}
}

// wait says how long a write of key's status must wait. Zero means it may
// be written now, and the write is then counted as done.
func (p *statusPacer) wait(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if at, ok := p.booked[key]; ok {
		if left := at.Sub(now); left > 0 {
			return left
		}
		delete(p.booked, key)
	} else {
		if left := statusInterval - now.Sub(p.last[key]); left > 0 {
			return left
		}
		if d := p.budget.ReserveN(now, 1).DelayFrom(now); d > 0 {
			p.booked[key] = now.Add(d)
			return d
		}
	}
	p.last[key] = now
	return 0
}

// due says how long until key may write its status, like wait but without
// booking a turn: zero when it may write now.
func (p *statusPacer) due(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if at, ok := p.booked[key]; ok {
		return max(0, at.Sub(now))
	}
	return max(0, statusInterval-now.Sub(p.last[key]))
}

// wrote counts a write of key's status made out of turn, as a change of
// Active is.
func (p *statusPacer) wrote(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = time.Now()
	delete(p.booked, key)
}

// forget drops what is known of a queue that is gone.
func (p *statusPacer) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.booked, key)
}

// sameConditions reports whether two condition lists agree on Active and
// UnusedSettings: a change of either is written at once, not paced.
func sameConditions(a, b []metav1.Condition) bool {
	for _, typ := range []string{berthv1alpha1.ConditionActive, berthv1alpha1.ConditionUnusedSettings} {
		ca, cb := meta.FindStatusCondition(a, typ), meta.FindStatusCondition(b, typ)
		if ca == nil || cb == nil {
			if ca != cb {
				return false
			}
			continue
		}
		if ca.Status != cb.Status || ca.Reason != cb.Reason || ca.Message != cb.Message || ca.ObservedGeneration != cb.ObservedGeneration {
			return false
		}
	}
	return true
}
