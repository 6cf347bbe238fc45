package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/pkg/engine/resources"
)

// Miss is why no domain takes a request, in numbers: the level whose one
// domain had to hold the pods, the most room one has, and how much the
// others have.
type Miss struct {
	req    Request
	levels []string
	// notSlices is set when the count is not a multiple of the slice size.
	notSlices bool
	// depth is the level's depth, 0 for the whole fabric.
	depth int
	need  int64
	// best is the domain with the most room, and rooms the room of every
	// other domain of the level, from the most.
	best  []string
	room  int64
	rooms []int64
}

// miss explains why no domain at depth holds need units.
func (s *search) miss(depth int, need int64) *Miss {
	m := &Miss{req: *s.req, levels: s.f.levels, depth: depth, need: need, room: -1}
	s.walk(s.f.root, depth, func(d *domain) {
		c := s.capacity(d)
		if c > m.room {
			if m.room >= 0 {
				m.rooms = append(m.rooms, m.room)
			}
			m.best, m.room = d.values, c
			return
		}
		m.rooms = append(m.rooms, c)
	})
	slices.SortFunc(m.rooms, func(a, b int64) int { return cmp.Compare(b, a) })
	return m
}

// Room is the most room a domain of the level has, in the request's
// units (pods, or slices), -1 when the fabric has no domain there.
func (m *Miss) Room() int64 { return m.room }

// String says what was asked and what the fabric has, e.g. "needs 4 pods
// (nvidia.com/gpu: 8 each) in one cloud.berth.dev/rack: the best, b1/r3,
// has room for 3; 2 others for 2, 5 for 0".
func (m *Miss) String() string {
	var b strings.Builder
	unit := "pods"
	switch {
	case m.req.SliceSize > 1 && m.need == 1:
		unit = fmt.Sprintf("slice of %d pods", m.req.SliceSize)
	case m.req.SliceSize > 1:
		unit = fmt.Sprintf("slices of %d pods", m.req.SliceSize)
	case m.need == 1:
		unit = "pod"
	}
	if m.notSlices {
		fmt.Fprintf(&b, "%d pods do not make slices of %d pods", m.req.Count, m.req.SliceSize)
		return b.String()
	}
	fmt.Fprintf(&b, "needs %d %s (%s each pod)", m.need, unit, perPod(m.req.PerPod))
	if m.req.SliceSize > 1 && m.req.SliceLevel+1 > m.depth && m.req.SliceLevel < len(m.levels) {
		fmt.Fprintf(&b, ", each slice in one %s,", m.levels[m.req.SliceLevel])
	}
	if m.depth == 0 {
		fmt.Fprintf(&b, " on the flavor's nodes: they have room for %d", max(m.room, 0))
		return b.String()
	}
	fmt.Fprintf(&b, " in one %s: ", m.levels[m.depth-1])
	if m.room < 0 {
		b.WriteString("no node has that label")
		return b.String()
	}
	fmt.Fprintf(&b, "the best, %s, has room for %d", strings.Join(m.best, "/"), m.room)
	if len(m.rooms) > 0 {
		b.WriteString("; ")
		b.WriteString(histogram(m.rooms))
	}
	return b.String()
}

// perPod renders a pod's request, e.g. "nvidia.com/gpu: 8, cpu: 4",
// leaving out the pod count.
func perPod(r resources.Requests) string {
	parts := make([]string, 0, len(r))
	for _, name := range r.Names() {
		if v := r[name]; v > 0 && name != corev1.ResourcePods {
			parts = append(parts, fmt.Sprintf("%s: %s", name, resources.Format(name, v)))
		}
	}
	return strings.Join(parts, ", ")
}

// histogram renders rooms, sorted from the most, as "2 others for 2, 5
// for 0", at most three groups.
func histogram(rooms []int64) string {
	var parts []string
	for i := 0; i < len(rooms); {
		j := i
		for j < len(rooms) && rooms[j] == rooms[i] {
			j++
		}
		if len(parts) == 3 {
			parts = append(parts, fmt.Sprintf("%d for less", len(rooms)-i))
			break
		}
		who := fmt.Sprint(j - i)
		if i == 0 {
			who += " others"
			if j-i == 1 {
				who = "1 other"
			}
		}
		parts = append(parts, fmt.Sprintf("%s for %d", who, rooms[i]))
		i = j
	}
	return strings.Join(parts, ", ")
}
