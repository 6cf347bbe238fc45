package resources

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	berthv1alpha1 "github.com/berth-dev/berth/apis/berth/v1alpha1"
)

// FlavorResource is one resource of one flavor: the unit quota is given in.
type FlavorResource struct {
	Flavor   berthv1alpha1.ResourceFlavorReference
	Resource corev1.ResourceName
}

// Requests is an amount per resource, in canonical units.
type Requests map[corev1.ResourceName]int64

// Usage is an amount per flavor and resource, in canonical units.
type Usage map[FlavorResource]int64

// Max is the largest canonical value. Arithmetic on quota saturates at it
// instead of wrapping: a total that does not fit is more than any quota,
// never less. The API refuses quotas above MaxQuota, so that no sum of
// quotas comes near it.
const Max = math.MaxInt64

var (
	// maxMilli is the largest quantity whose milli-value fits.
	maxMilli = *resource.NewQuantity(Max/1000, resource.DecimalSI)
	maxWhole = *resource.NewQuantity(Max, resource.DecimalSI)
)

// Value converts q to the canonical unit of the named resource. cpu is
// counted in milli-units, everything else in whole units (rounded up, so
// that a fractional request never fits in less quota than it needs). A
// quantity too large for the unit is Max: "1E" cpu is 10^21 milli-units,
// whose MilliValue wraps around to a small number.
func Value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		if q.Cmp(maxMilli) > 0 {
			return Max
		}
		return q.MilliValue()
	}
	if q.Cmp(maxWhole) > 0 {
		return Max
	}
	return q.Value()
}

// Add is a+b for non-negative values, Max when that does not fit.
func Add(a, b int64) int64 {
	if a > Max-b {
		return Max
	}
	return a + b
}

// Mul is a*n for non-negative values, Max when that does not fit.
func Mul(a, n int64) int64 {
	if n != 0 && a > Max/n {
		return Max
	}
	return a * n
}

// Quantity converts a canonical value back to a Quantity, in the format a
// person expects for the resource.
func Quantity(name corev1.ResourceName, v int64) resource.Quantity {
	switch name {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(v, resource.BinarySI)
	default:
		return *resource.NewQuantity(v, resource.DecimalSI)
	}
}

// Format renders a canonical value for messages, e.g. "1500m" or "16Gi".
func Format(name corev1.ResourceName, v int64) string {
	q := Quantity(name, v)
	return q.String()
}

// FromList converts a ResourceList into Requests.
func FromList(l corev1.ResourceList) Requests {
	r := make(Requests, len(l))
	for name, q := range l {
		r[name] = Value(name, q)
	}
	return r
}

// ToList converts Requests into a ResourceList.
func (r Requests) ToList() corev1.ResourceList {
	l := make(corev1.ResourceList, len(r))
	for name, v := range r {
		l[name] = Quantity(name, v)
	}
	return l
}

// Add adds o to r.
func (r Requests) Add(o Requests) {
	for name, v := range o {
		r[name] = Add(r[name], v)
	}
}

// Max raises every resource of r to at least its value in o.
func (r Requests) Max(o Requests) {
	for name, v := range o {
		if v > r[name] {
			r[name] = v
		}
	}
}

// Scaled returns r multiplied by n.
func (r Requests) Scaled(n int64) Requests {
	s := make(Requests, len(r))
	for name, v := range r {
		s[name] = Mul(v, n)
	}
	return s
}

// Names returns the resource names of r, sorted, so that iteration and
// messages are deterministic.
func (r Requests) Names() []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(r))
	for name := range r {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// Add adds o to u.
func (u Usage) Add(o Usage) {
	for fr, v := range o {
		u[fr] = Add(u[fr], v)
	}
}

// Sub subtracts o from u, dropping entries that reach zero.
func (u Usage) Sub(o Usage) {
	for fr, v := range o {
		if n := u[fr] - v; n != 0 {
			u[fr] = n
		} else {
			delete(u, fr)
		}
	}
}

// ByResource sums u over its flavors: the amount of each resource,
// whichever flavor it is on.
func (u Usage) ByResource() Requests {
	r := make(Requests, len(u))
	for fr, v := range u {
		r[fr.Resource] = Add(r[fr.Resource], v)
	}
	return r
}
