package controller

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/pkg/engine/cache"
	"github.com/berth-dev/berth/pkg/engine/queue"
)

// usageSampler samples the quota each LocalQueue's workloads hold, every
// interval, into the queues' usage history (admission fair sharing), and
// has the LocalQueues' status written with it. It runs on the leader only.
type usageSampler struct {
	cache    *cache.Cache
	queues   *queue.Manager
	notifier *StatusNotifier
	interval time.Duration
}

// Start samples until ctx ends.
func (s *usageSampler) Start(ctx context.Context) error {
	return sampleEvery(ctx, s.interval, s.sample)
}

// sampleEvery calls sample with the time of each tick, every interval,
// until ctx ends; it returns nil then, as a manager's runnable does.
func sampleEvery(ctx context.Context, interval time.Duration, sample func(now time.Time)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			sample(now)
		}
	}
}

func (s *usageSampler) sample(now time.Time) {
	for _, key := range s.queues.SampleUsage(now, s.cache.LocalQueueUsage()) {
		if ns, name, ok := strings.Cut(key, "/"); ok {
			s.notifier.LocalQueueChanged(types.NamespacedName{Namespace: ns, Name: name})
		}
	}
}
