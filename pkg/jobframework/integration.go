package jobframework

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Integration is a job framework Berth can admit.
type Integration struct {
	// Name is how the configuration enables it, e.g. "batch/job".
	Name string
	// GVK is the job's kind.
	GVK schema.GroupVersionKind
	// NewJob returns an empty job of the kind, to read into.
	NewJob func() GenericJob
	// Wrap views an object of the kind as a GenericJob.
	Wrap func(client.Object) (GenericJob, error)
	// AddToScheme adds the kind's API to a scheme.
	AddToScheme func(*runtime.Scheme) error
}

// JobWithPodTemplates is implemented by jobs whose pod templates the
// webhook may default, e.g. with the ClusterQueue's schedulerName.
type JobWithPodTemplates interface {
	// PodTemplates are the job's pod templates, to change in place.
	PodTemplates() []*corev1.PodTemplateSpec
}

var (
	registryMu sync.Mutex
	registry   = map[string]*Integration{}
)

// Register makes a framework available. Frameworks call it from an init
// function of their package; cmd/berth imports the packages it ships.
func Register(i *Integration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, ok := registry[i.Name]; ok {
		panic(fmt.Sprintf("job integration %s registered twice", i.Name))
	}
	registry[i.Name] = i
}

// Lookup returns the registered framework with the given name.
func Lookup(name string) (*Integration, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	i, ok := registry[name]
	return i, ok
}

// ForKind returns the registered framework of a job's kind.
func ForKind(gvk schema.GroupVersionKind) (*Integration, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, i := range registry {
		if i.GVK == gvk {
			return i, true
		}
	}
	return nil, false
}

// Names lists the registered frameworks.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Enabled returns the registered frameworks among names, or an error
// naming one that is not registered.
func Enabled(names []string) ([]*Integration, error) {
	var out []*Integration
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		i, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("unknown job integration %q; known: %v", n, Names())
		}
		out = append(out, i)
	}
	return out, nil
}
