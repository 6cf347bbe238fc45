package topology

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/berth-dev/berth/pkg/engine/resources"
)

// Request is how a podset asks to be placed in a fabric.
type Request struct {
	// PerPod is the request of one pod; a "pods" entry counts against the
	// nodes' allocatable pods.
	PerPod resources.Requests
	// Count is the number of pods.
	Count int32
	// Level is the index of the level one of whose domains holds all the
	// pods, or -1 for none: the pods go in as few domains as they fit.
	Level int
	// Required is set when the pods must be in one domain of Level; else
	// the search goes up a level at a time until one domain holds them.
	Required bool
	// SliceLevel and SliceSize ask for slices of SliceSize pods, each
	// inside one domain of SliceLevel. A SliceSize of 0 or 1 asks for none.
	SliceLevel int
	SliceSize  int32
	// NodeSelector and Tolerations are the pods' own, with the flavor's
	// tolerations: a node they do not match or tolerate takes no pod.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// NodeAffinity is the pods' required node affinity; nil for none.
	NodeAffinity *corev1.NodeSelector
	// Within, when set, are the values of a domain whose nodes alone may
	// take the pods: the domain a preemption would free.
	Within []string
}

// Domain is a narrowest domain of an assignment (a node, when the last
// level is the host name) and the pods it takes.
type Domain struct {
	// Values are the domain's values of the fabric's levels.
	Values []string
	// Count is the number of pods.
	Count int32
}

// Assignment is where a podset's pods go: domains and counts, in the
// fabric's order.
type Assignment struct {
	// Levels are the fabric's levels.
	Levels []string
	// Domains are the narrowest domains that take pods.
	Domains []Domain
}

// search is one Find: the room of every domain for the request's pods.
type search struct {
	f   *Fabric
	req *Request
	// v is the request of one pod in the fabric's resources.
	v []int64
	// sliceDepth is the depth of the slices' domains; the nodes' depth
	// without slices.
	sliceDepth int
	sliceSize  int64
	// affinity matches the request's required node affinity; nil for none.
	affinity *nodeaffinity.LazyErrorNodeSelector
	// units is each domain's room by id: slices at and above sliceDepth,
	// pods below; pods is its room in pods.
	pods, units []int64
}

func newSearch(f *Fabric, req *Request) *search {
	s := &search{f: f, req: req, sliceDepth: len(f.levels) + 1, sliceSize: 1}
	if req.NodeAffinity != nil {
		s.affinity = nodeaffinity.NewLazyErrorNodeSelector(req.NodeAffinity)
	}
	return s
}

// Find looks for the nodes that take the request's pods, choosing the
// tightest fit: one domain at the asked level if any holds them, the one
// with the least room left; within it the fewest domains of each level,
// taking the ones with the most room first and, for the last share, the
// one with the least room that holds it; the fabric's order breaks ties.
// It returns why none fits otherwise.
func (f *Fabric) Find(req Request) (*Assignment, *Miss) {
	s := newSearch(f, &req)
	top := req.Level + 1
	if req.SliceSize > 1 {
		s.sliceSize = int64(req.SliceSize)
		// A slice is never wider than the domain that holds them all.
		s.sliceDepth = max(req.SliceLevel+1, top)
		if int64(req.Count)%s.sliceSize != 0 {
			return nil, &Miss{req: req, levels: f.levels, notSlices: true}
		}
	}
	need := int64(req.Count) / s.sliceSize
	if req.Count <= 0 {
		return &Assignment{Levels: f.levels}, nil
	}
	v, any := f.vector(req.PerPod)
	s.v = v
	if cap(f.scratch) < 2*f.domains {
		f.scratch = make([]int64, 2*f.domains)
	}
	s.pods, s.units = f.scratch[:f.domains], f.scratch[f.domains:2*f.domains]
	if any {
		s.room(f.root)
	} else {
		clear(f.scratch)
	}
	for depth := top; depth >= 0; depth-- {
		if d := s.tightest(depth, need); d != nil {
			a := &Assignment{Levels: f.levels}
			s.place(d, need, a)
			return a, nil
		}
		if req.Required {
			return nil, s.miss(depth, need)
		}
	}
	return nil, s.miss(0, need)
}

// room fills in the room of d and the domains below it.
func (s *search) room(d *domain) {
	var pods, units int64
	if d.children == nil {
		pods = s.fits(d.node)
	}
	for _, c := range d.children {
		s.room(c)
		pods = add(pods, s.pods[c.id])
		units = add(units, s.units[c.id])
	}
	switch {
	case d.depth > s.sliceDepth:
		units = pods
	case d.depth == s.sliceDepth:
		units = pods / s.sliceSize
	}
	s.pods[d.id], s.units[d.id] = pods, units
}

func add(a, b int64) int64 { return resources.Add(a, b) }

// fits is how many of the request's pods node i takes.
func (s *search) fits(i int) int64 {
	n := &s.f.nodes[i]
	for k, v := range s.req.NodeSelector {
		if n.Labels[k] != v {
			return 0
		}
	}
	if s.affinity != nil {
		// A term that cannot be parsed matches no node, as in the
		// scheduler; the pods' own validation has refused it before.
		if ok, _ := s.affinity.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}); !ok {
			return 0
		}
	}
	for j := range n.Taints {
		t := &n.Taints[j]
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) &&
			!corev1helpers.TolerationsTolerateTaint(klog.Background(), s.req.Tolerations, t, true) {
			return 0
		}
	}
	return s.f.fits(i, s.v)
}

// capacity is the room of d in the units its parent counts in: slices
// down to the slices' domains, pods below them.
func (s *search) capacity(d *domain) int64 { return s.units[d.id] }

// tightest is the domain at depth that holds need units with the least
// room to spare, or nil.
func (s *search) tightest(depth int, need int64) *domain {
	var best *domain
	s.walk(s.f.root, depth, func(d *domain) {
		if c := s.capacity(d); c >= need && (best == nil || c < s.capacity(best)) && within(d, s.req.Within) {
			best = d
		}
	})
	return best
}

// walk calls fn for each domain at depth below d, in the fabric's order.
func (s *search) walk(d *domain, depth int, fn func(*domain)) {
	if d.depth == depth {
		fn(d)
		return
	}
	for _, c := range d.children {
		s.walk(c, depth, fn)
	}
}

// place puts n units in d: the children with the most room first, and for
// the last share the child with the least room that holds it.
func (s *search) place(d *domain, n int64, a *Assignment) {
	if d.depth == s.sliceDepth {
		n *= s.sliceSize
	}
	if d.children == nil {
		// Nodes that share their values (the last level is not the host
		// name) make one domain.
		if last := len(a.Domains) - 1; last >= 0 && slices.Equal(a.Domains[last].Values, d.values) {
			a.Domains[last].Count += int32(n)
			return
		}
		a.Domains = append(a.Domains, Domain{Values: d.values, Count: int32(n)})
		return
	}
	kids := slices.Clone(d.children)
	slices.SortStableFunc(kids, func(x, y *domain) int { return cmp.Compare(s.capacity(y), s.capacity(x)) })
	var chosen []*domain
	var shares []int64
	for i := 0; n > 0 && i < len(kids); i++ {
		if last := s.leastHolding(kids[i:], n); last != nil {
			chosen, shares = append(chosen, last), append(shares, n)
			break
		}
		c := s.capacity(kids[i])
		chosen, shares = append(chosen, kids[i]), append(shares, c)
		n -= c
	}
	// Assign in the fabric's order, whatever the order of choice.
	order := make([]int, len(chosen))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return slices.Compare(chosen[x].values, chosen[y].values) })
	for _, i := range order {
		s.place(chosen[i], shares[i], a)
	}
}

// leastHolding is the first of kids, sorted by room from the most, with
// the least room that still holds n, or nil.
func (s *search) leastHolding(kids []*domain, n int64) *domain {
	var best *domain
	for _, k := range kids {
		c := s.capacity(k)
		if c < n {
			break
		}
		if best == nil || c < s.capacity(best) {
			best = k
		}
	}
	return best
}

// within reports whether d lies in the domain with values w, or w is
// empty.
func within(d *domain, w []string) bool {
	n := min(len(d.values), len(w))
	return slices.Equal(d.values[:n], w[:n])
}

// Stranded is what the nodes have free in the domains of the request's
// level that have room for fewer than its pods: resources no gang of that
// shape can use, the fabric's fragmentation as that gang sees it.
func (f *Fabric) Stranded(req Request) resources.Requests {
	out := resources.Requests{}
	if req.Level < 0 || req.Count <= 0 {
		return out
	}
	s := newSearch(f, &req)
	v, any := f.vector(req.PerPod)
	if !any {
		return out
	}
	s.v = v
	s.pods, s.units = make([]int64, f.domains), make([]int64, f.domains)
	s.room(f.root)
	var leaves []int
	s.walk(f.root, req.Level+1, func(d *domain) {
		if s.capacity(d) >= int64(req.Count) {
			return
		}
		leaves = f.leaves(d, leaves[:0])
		for _, i := range leaves {
			for k, r := range f.names {
				out[r] = resources.Add(out[r], f.free[i*len(f.names)+k])
			}
		}
	})
	return out
}
