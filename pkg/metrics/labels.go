package metrics

import (
	"errors"
	"slices"
	"strings"
	"sync"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha1 "github.com/berth-dev/berth/apis/config/v1alpha1"
)

// queueLabels holds, per ClusterQueue and LocalQueue, the values of the
// custom labels, copied from the queue's own labels by its controller.
type queueLabels struct {
	mu     sync.RWMutex
	custom []configv1alpha1.MetricLabel
	// localQueues is whether the series per LocalQueue are published.
	localQueues bool
	// registered is whether Configure registered the queue series.
	registered bool
	cq         map[string][]string
	lq         map[string][]string
	// lqUsage is the flavors and resources of each LocalQueue's usage
	// series.
	lqUsage map[string]map[[2]string]bool
}

var labels = &queueLabels{localQueues: true, cq: map[string][]string{}, lq: map[string][]string{}, lqUsage: map[string]map[[2]string]bool{}}

// Configure makes the queue series with the configuration's custom labels,
// turns the LocalQueue series on or off, and registers them all with the
// manager's registry. It is called at start, before anything records a
// metric. A registry never forgets the labels a name had: a second call
// with other custom labels fails.
func Configure(cfg configv1alpha1.Metrics) error {
	labels.mu.Lock()
	done := labels.registered
	same := slices.Equal(labels.custom, cfg.CustomLabels) && labels.localQueues == ptr.Deref(cfg.EnableLocalQueueMetrics, true)
	labels.registered = true
	labels.mu.Unlock()
	switch {
	case done && same:
		return nil
	case done:
		return errors.New("the metrics are configured already, with other custom labels")
	}
	configure(cfg)
	var errs []error
	for _, c := range queueCollectors() {
		errs = append(errs, metrics.Registry.Register(c))
	}
	return errors.Join(errs...)
}

// configure makes the queue series again, unregistered.
func configure(cfg configv1alpha1.Metrics) {
	names := make([]string, len(cfg.CustomLabels))
	for i, l := range cfg.CustomLabels {
		names[i] = l.Name
	}
	build(names)
	labels.mu.Lock()
	defer labels.mu.Unlock()
	labels.custom = cfg.CustomLabels
	labels.localQueues = ptr.Deref(cfg.EnableLocalQueueMetrics, true)
	labels.cq, labels.lq, labels.lqUsage = map[string][]string{}, map[string][]string{}, map[string]map[[2]string]bool{}
}

// LocalQueueMetrics reports whether the series per LocalQueue are on.
func LocalQueueMetrics() bool {
	labels.mu.RLock()
	defer labels.mu.RUnlock()
	return labels.localQueues
}

// CQ is the label values of a ClusterQueue's series: its name, rest, then
// its custom labels.
func CQ(name string, rest ...string) []string {
	return labels.values(labels.cq, name, append([]string{name}, rest...))
}

// LQ is the label values of a LocalQueue's series: its namespace and name,
// rest, then its custom labels.
func LQ(namespace, name string, rest ...string) []string {
	return labels.values(labels.lq, namespace+"/"+name, append([]string{namespace, name}, rest...))
}

func (l *queueLabels) values(of map[string][]string, key string, base []string) []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if v, ok := of[key]; ok {
		return append(base, v...)
	}
	// Not seen yet by its controller: empty values, which the first
	// SetClusterQueueLabels with values replaces.
	return append(base, make([]string, len(l.custom))...)
}

// SetClusterQueueLabels copies a ClusterQueue's labels into its series'
// custom labels; when they change, its series start again with the new
// values.
func SetClusterQueueLabels(name string, objLabels map[string]string) {
	if labels.set(labels.cq, name, objLabels) {
		relabelClusterQueue(name)
	}
}

// SetLocalQueueLabels is SetClusterQueueLabels for a LocalQueue.
func SetLocalQueueLabels(namespace, name string, objLabels map[string]string) {
	if labels.set(labels.lq, namespace+"/"+name, objLabels) {
		dropLocalQueue(namespace, name)
	}
}

// set records key's values and reports whether they replaced others,
// empty ones included: series were recorded with those.
func (l *queueLabels) set(of map[string][]string, key string, objLabels map[string]string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.custom) == 0 {
		return false
	}
	v := make([]string, len(l.custom))
	for i, c := range l.custom {
		key := c.SourceLabelKey
		if key == "" {
			key = c.Name
		}
		v[i] = objLabels[key]
	}
	old, seen := of[key]
	of[key] = v
	return seen && strings.Join(old, "\x00") != strings.Join(v, "\x00") || !seen && strings.Join(v, "") != ""
}

func (l *queueLabels) forget(of map[string][]string, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(of, key)
	delete(l.lqUsage, key)
}

// LocalQueueState is what the series of a LocalQueue tell.
type LocalQueueState struct {
	Active, Inadmissible, Admitted int
	// Usage is per flavor, then resource, in the resource's unit.
	Usage map[string]map[string]float64
}

// SetLocalQueue sets the gauges of a LocalQueue, and drops those of a
// flavor or resource it no longer uses.
func SetLocalQueue(namespace, name string, objLabels map[string]string, st LocalQueueState) {
	if !LocalQueueMetrics() {
		return
	}
	SetLocalQueueLabels(namespace, name, objLabels)
	LocalQueuePendingWorkloads.WithLabelValues(LQ(namespace, name, "active")...).Set(float64(st.Active))
	LocalQueuePendingWorkloads.WithLabelValues(LQ(namespace, name, "inadmissible")...).Set(float64(st.Inadmissible))
	LocalQueueAdmittedActiveWorkloads.WithLabelValues(LQ(namespace, name)...).Set(float64(st.Admitted))
	key := namespace + "/" + name
	labels.mu.Lock()
	before := labels.lqUsage[key]
	now := map[[2]string]bool{}
	for f, rs := range st.Usage {
		for r := range rs {
			now[[2]string{f, r}] = true
		}
	}
	labels.lqUsage[key] = now
	labels.mu.Unlock()
	for fr := range before {
		if !now[fr] {
			LocalQueueResourceUsage.DeleteLabelValues(LQ(namespace, name, fr[0], fr[1])...)
		}
	}
	for f, rs := range st.Usage {
		for r, v := range rs {
			LocalQueueResourceUsage.WithLabelValues(LQ(namespace, name, f, r)...).Set(v)
		}
	}
}
