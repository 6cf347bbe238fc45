package controllermanager

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/berth-dev/berth/pkg/util/logging"
	"github.com/berth-dev/berth/pkg/workloadwriter"
)

// Deviations are where Berth's controller departs from stock
// controller-runtime and client-go, each for a cost measured on the perf
// baseline (15,000 workloads, 2 cores; see site/content/performance.md):
//
//	what                                       stock instead                        measured
//	Workload, ClusterQueue, LocalQueue watches  client-go's reflector and decoder    0.12 of client-go's CPU per event
//	  decoded in one pass (pkg/fastwatch)
//	Workloads of one pod spec share it in the   each decodes its own                 0.74 of the memory per cached
//	  cache (fastwatch.Sharing)                                                          Workload of three pod specs
//	Workload status written as a PUT answered   a merge patch or an update           0.81 to 0.92 of a patch's API server CPU;
//	  with metadata only (workloadwriter.NewPut)  decoding the whole object          the answer read in 2 µs instead of 11 µs
//	REST mappings remembered (NewRESTMapper)    asked of the dynamic mapper          6% of the controller's allocations
//	client-go's work queue (ControllerDefaults) controller-runtime's priority queue  7 to 8% of the controller's CPU
//	logger values encoded when a line is        encoded at every WithValues          a few µs per reconcile
//	  written (logging.Lazy)
//	GOMAXPROCS 1 unless set (SetProcs)          every core of the node               a tenth less CPU for the same wall time
//	Go's heap kept under 45% of the memory      grows to twice the live data         peak memory at large 0.76, CPU 1.21
//	  limit (SetMemoryLimit)
//
// With Stock set, none of them applies: the controller runs as
// controller-runtime and client-go ship, so that a regression found after
// upgrading either can be bisected to Berth's code or theirs. Managed
// fields are dropped from the cache either way, with controller-runtime's
// own transform.
type Deviations struct {
	// Stock turns every deviation off.
	Stock bool
}

// defaultProcs is how many threads run the controller's Go code at once,
// unless the GOMAXPROCS environment variable says otherwise. Its work is
// one admission loop, reconciles that take microseconds and I/O: a small
// part of one core on the benchmark. Go would otherwise take every core of
// the node, and on an idle core it spins looking for goroutines to run and
// marks the heap for the garbage collector, CPU the rest of the node could
// use. In benchmark runs taken in turns, one thread cost about a tenth
// less CPU than two, relative to the API server's, and the runs took as
// long.
const defaultProcs = 1

// SetProcs sets the number of threads to defaultProcs, unless getenv
// finds GOMAXPROCS set or d is Stock, and returns the number in effect.
func (d Deviations) SetProcs(getenv func(string) string) int {
	if !d.Stock && getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(defaultProcs)
	}
	return runtime.GOMAXPROCS(0)
}

// softLimitPercent is the share of the container's memory limit that Go's
// soft limit takes: half of it, less a tenth of that half for what the
// kernel counts and Go does not, the binary's code above all. With the
// soft limit at half of 1 GiB, the controller's resident memory peaked 7
// to 12 MiB above it in the benchmark's large runs.
const softLimitPercent = 45

// MemoryLimitEnv names the environment variable that carries the memory
// limit of the controller's container, in bytes or as a quantity: the
// Deployment sets it from limits.memory through the downward API.
const MemoryLimitEnv = "BERTH_MEMORY_LIMIT"

// SetMemoryLimit sets Go's soft memory limit to softLimitPercent of the
// container's memory limit (MemoryLimitEnv), unless getenv finds
// GOMEMLIMIT set, the container has no limit, or d is Stock. It returns
// the soft limit in effect, math.MaxInt64 for none.
//
// Left to itself, Go collects once the heap has grown to twice the live
// data, so a controller holding 300 MB of Workloads peaks at 600 MB and
// more, though nothing needs it. The controller keeps to half the
// container's limit; the other half is room for what a soft limit cannot
// bound: a relist, when the API server closes a watch that fell behind,
// decodes every Workload afresh while the old ones are still held. Below
// the soft limit nothing changes; near it, the collector runs more often
// (the cost is in site/content/performance.md).
func (d Deviations) SetMemoryLimit(getenv func(string) string) (int64, error) {
	if !d.Stock && getenv("GOMEMLIMIT") == "" {
		if v := getenv(MemoryLimitEnv); v != "" {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", MemoryLimitEnv, err)
			}
			if limit := q.Value(); limit > 0 {
				debug.SetMemoryLimit(limit / 100 * softLimitPercent)
			}
		}
	}
	return debug.SetMemoryLimit(-1), nil
}

// Logger returns log, lazy unless d is Stock.
func (d Deviations) Logger(log logr.Logger) logr.Logger {
	if d.Stock {
		return log
	}
	return logging.Lazy(log)
}

// CacheOptions is how the manager caches objects.
func (d Deviations) CacheOptions(cfg *rest.Config, scheme *k8sruntime.Scheme, scope Scope) (ctrlcache.Options, error) {
	if d.Stock {
		return ctrlcache.Options{Scheme: scheme, DefaultTransform: ctrlcache.TransformStripManagedFields(), ByObject: scope.byObject()}, nil
	}
	return CacheOptions(cfg, scheme, scope)
}

// MapperProvider is the manager's RESTMapper (ctrl.Options.MapperProvider).
func (d Deviations) MapperProvider() func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	if d.Stock {
		return apiutil.NewDynamicRESTMapper
	}
	return NewRESTMapper
}

// ControllerDefaults is how the manager runs its controllers: on
// client-go's work queue rather than controller-runtime's priority queue.
// The priority queue orders what it holds in a tree and runs goroutines of
// its own to move items between buffers; it puts the events of an initial
// list behind newer ones, which Berth does not need (admission is decided
// by the scheduler, not in reconciles).
func (d Deviations) ControllerDefaults() config.Controller {
	if d.Stock {
		return config.Controller{}
	}
	return config.Controller{UsePriorityQueue: ptr.To(false)}
}

// WorkloadWriter is how mgr's controllers write Workload status.
func (d Deviations) WorkloadWriter(mgr manager.Manager) (workloadwriter.Writer, error) {
	if d.Stock {
		return workloadwriter.NewUpdate(mgr.GetClient()), nil
	}
	return workloadwriter.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme())
}
