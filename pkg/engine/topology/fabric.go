package topology

import (
	"cmp"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/pkg/engine/resources"
)

// Node is one node of a fabric.
type Node struct {
	// Name is the node's name.
	Name string
	// Labels are the node's labels, for podsets' node selectors.
	Labels map[string]string
	// Taints are the node's taints with effect NoSchedule or NoExecute.
	Taints []corev1.Taint
	// Free is the node's allocatable less the requests of the pods bound
	// to it; never negative.
	Free resources.Requests
}

// Fabric is the nodes of one flavor arranged in domains by the levels of
// a topology. It is not safe for concurrent use: a scheduling cycle owns
// its copy (Clone) and takes from it as it admits.
//
// What the nodes have free is kept as one vector of the fabric's
// resources per node, so that a copy for a cycle is one slice, and a
// search reads no maps.
type Fabric struct {
	levels []string
	nodes  []Node
	// names are the resources the nodes have, in the order of free's
	// columns; free holds a row per node.
	names []corev1.ResourceName
	free  []int64
	// root holds the domains of the first level; each domain the next
	// level's, down to the nodes; domains counts them, root included.
	root    *domain
	domains int
	// byName indexes nodes by name, for Take.
	byName map[string]int
	// scratch is a search's room per domain, reused.
	scratch []int64
}

// domain is a set of nodes that share their values of the levels down to
// its own.
type domain struct {
	// id indexes a search's room of the domain.
	id int
	// depth is 0 for the root, i for a domain of levels[i-1], and
	// len(levels)+1 for a node.
	depth int
	// values are the domain's label values, one per level down to its own.
	values   []string
	children []*domain
	// node is the index of the node of a leaf.
	node int
}

// NewFabric arranges nodes by levels, the node label keys from the widest
// domain to the narrowest (the last is usually kubernetes.io/hostname).
// A node without a label of some level is left out: pods confined to a
// domain cannot be placed on it.
func NewFabric(levels []string, nodes []Node) *Fabric {
	f := &Fabric{levels: slices.Clone(levels), byName: make(map[string]int, len(nodes))}
	values := make([][]string, 0, len(nodes))
	for _, n := range nodes {
		if v, ok := valuesOf(levels, n.Labels); ok {
			f.nodes = append(f.nodes, n)
			values = append(values, v)
		}
	}
	// Sorted by values, the nodes of a domain are contiguous, and the
	// search's order is deterministic.
	order := make([]int, len(f.nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(slices.Compare(values[a], values[b]), strings.Compare(f.nodes[a].Name, f.nodes[b].Name))
	})
	sorted := make([]Node, len(order))
	sortedValues := make([][]string, len(order))
	names := map[corev1.ResourceName]bool{}
	for i, j := range order {
		sorted[i], sortedValues[i] = f.nodes[j], values[j]
		for r := range f.nodes[j].Free {
			names[r] = true
		}
	}
	f.nodes = sorted
	f.names = slices.Sorted(func(yield func(corev1.ResourceName) bool) {
		for r := range names {
			if !yield(r) {
				return
			}
		}
	})
	f.free = make([]int64, len(f.nodes)*len(f.names))
	f.root = &domain{id: 0}
	f.domains = 1
	for i := range f.nodes {
		f.byName[f.nodes[i].Name] = i
		for k, r := range f.names {
			f.free[i*len(f.names)+k] = max(0, f.nodes[i].Free[r])
		}
		d := f.root
		for depth := 1; depth <= len(levels); depth++ {
			var child *domain
			if last := len(d.children) - 1; last >= 0 && d.children[last].values[depth-1] == sortedValues[i][depth-1] {
				child = d.children[last]
			}
			if child == nil {
				child = &domain{id: f.domains, depth: depth, values: sortedValues[i][:depth]}
				f.domains++
				d.children = append(d.children, child)
			}
			d = child
		}
		d.children = append(d.children, &domain{id: f.domains, depth: len(levels) + 1, values: sortedValues[i], node: i})
		f.domains++
	}
	return f
}

// valuesOf is a node's value of each level, and whether it has them all.
func valuesOf(levels []string, labels map[string]string) ([]string, bool) {
	values := make([]string, len(levels))
	for i, l := range levels {
		v, ok := labels[l]
		if !ok || v == "" {
			return nil, false
		}
		values[i] = v
	}
	return values, true
}

// Levels are the fabric's node label keys, widest first.
func (f *Fabric) Levels() []string { return f.levels }

// Level is the index of the level with node label key, or -1.
func (f *Fabric) Level(key string) int { return slices.Index(f.levels, key) }

// Len is the number of nodes in the fabric.
func (f *Fabric) Len() int { return len(f.nodes) }

// Free is what node i of the fabric, in its order, has free.
func (f *Fabric) Free(i int) resources.Requests {
	out := make(resources.Requests, len(f.names))
	for k, r := range f.names {
		out[r] = f.free[i*len(f.names)+k]
	}
	return out
}

// Clone copies what a cycle changes: the nodes' free resources. The
// domains are shared.
func (f *Fabric) Clone() *Fabric {
	out := *f
	out.free = slices.Clone(f.free)
	out.scratch = nil
	return &out
}

// vector is perPod in the order of the fabric's resources, and false when
// it asks for a resource no node has.
func (f *Fabric) vector(perPod resources.Requests) ([]int64, bool) {
	v := make([]int64, len(f.names))
	n := 0
	for k, r := range f.names {
		if q := perPod[r]; q > 0 {
			v[k] = q
			n++
		}
	}
	for _, q := range perPod {
		if q > 0 {
			n--
		}
	}
	return v, n == 0
}

// fits is how many pods of request vector v node i holds.
func (f *Fabric) fits(i int, v []int64) int64 {
	room := int64(math.MaxInt64)
	row := f.free[i*len(f.names) : (i+1)*len(f.names)]
	for k, q := range v {
		if q > 0 {
			room = min(room, row[k]/q)
		}
	}
	return room
}

// take subtracts n pods of request vector v from node i.
func (f *Fabric) take(i int, v []int64, n int64) {
	row := f.free[i*len(f.names) : (i+1)*len(f.names)]
	for k, q := range v {
		row[k] = max(0, row[k]-resources.Mul(q, n))
	}
}

// Take subtracts from the free resources of an assignment's nodes what
// its pods not yet bound will take: the cycle admitted them, or they are
// admitted and on their way. bound is how many of the workload's pods
// each node has already, counted in its free resources (nil for none); it
// is consumed. Domains no longer in the fabric are skipped.
func (f *Fabric) Take(a *Assignment, perPod resources.Requests, bound map[string]int32) {
	v, _ := f.vector(perPod)
	f.eachDomain(a, func(d Domain, leaves []int) {
		left := int64(d.Count)
		for _, i := range leaves {
			if b := min(int64(bound[f.nodes[i].Name]), left); b > 0 {
				bound[f.nodes[i].Name] -= int32(b)
				left -= b
			}
		}
		// What is not bound yet goes on the first nodes that hold it.
		for k, i := range leaves {
			if left == 0 {
				break
			}
			n := left
			if k < len(leaves)-1 {
				n = min(n, f.fits(i, v))
			}
			f.take(i, v, n)
			left -= n
		}
	})
}

// Release gives back to the nodes of an assignment what its pods take:
// the pods of a workload a preemption would remove, bound or not.
func (f *Fabric) Release(a *Assignment, perPod resources.Requests) {
	v, _ := f.vector(perPod)
	f.eachDomain(a, func(d Domain, leaves []int) {
		// A domain of one node is exact; of several (the last level is
		// not the host name), the first takes it back.
		row := f.free[leaves[0]*len(f.names) : (leaves[0]+1)*len(f.names)]
		for k, q := range v {
			row[k] = resources.Add(row[k], resources.Mul(q, int64(d.Count)))
		}
	})
}

// eachDomain calls fn with each domain of a that the fabric still has and
// the nodes under it; the slice of nodes is reused between calls.
func (f *Fabric) eachDomain(a *Assignment, fn func(d Domain, leaves []int)) {
	var leaves []int
	for _, d := range a.Domains {
		dom := f.find(d.Values)
		if dom == nil {
			continue
		}
		leaves = f.leaves(dom, leaves[:0])
		fn(d, leaves)
	}
}

// Domains are the values of the domains of level l, in the fabric's order.
func (f *Fabric) Domains(l int) [][]string {
	var out [][]string
	var walk func(d *domain)
	walk = func(d *domain) {
		if d.depth == l+1 {
			out = append(out, d.values)
			return
		}
		for _, c := range d.children {
			walk(c)
		}
	}
	walk(f.root)
	return out
}

// find is the domain with values, or nil.
func (f *Fabric) find(values []string) *domain {
	d := f.root
	for depth, v := range values {
		// The children are sorted by their values.
		i, ok := slices.BinarySearchFunc(d.children, v, func(c *domain, v string) int { return strings.Compare(c.values[depth], v) })
		if !ok {
			return nil
		}
		d = d.children[i]
	}
	return d
}

// leaves appends the indexes of the nodes of d to into.
func (f *Fabric) leaves(d *domain, into []int) []int {
	if d.children == nil {
		return append(into, d.node)
	}
	for _, c := range d.children {
		into = f.leaves(c, into)
	}
	return into
}
