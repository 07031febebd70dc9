package processctxprocessor

import (
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// itemTree is one resource's items — log records, or profile samples — in
// their containers, as regrouping sees them: a sequence of leaves (a
// scope's records; a profile's samples), each a slice of item pointers.
// logsTree and profilesTree implement it; regroupResource is the one
// algorithm over both.
type itemTree interface {
	leaves() int
	// items returns the item pointers of a leaf (see itemPointers).
	items(leaf int) *[]unsafe.Pointer
	// pid returns the pid of item i of a leaf, 0 when it names none.
	pid(leaf, i int) int
	// newResource appends group g's resource (a copy of the original's) to
	// the signal's resources and returns its attributes; pid is the group's
	// host pid.
	newResource(g, pid int) pcommon.Map
	// openLeaf creates group g's copy of a leaf's containers under g's
	// resource and returns its item pointers, with room for n items.
	openLeaf(g, leaf, n int) *[]unsafe.Pointer
	// emptied: every item of the leaf moved; first is the group that got
	// the first of them.
	emptied(leaf, first int)
	// prune removes the containers emptied, leaf by leaf.
	prune()
}

// regroupScratch is the memory regrouping reuses from resource to
// resource within a batch.
type regroupScratch struct {
	decisions []int32 // group of each item, in order; -1: stays
	groups    []group
	counts    []int // items of each group in the current leaf
	dst       []*[]unsafe.Pointer
}

// group is one process's share of a resource being regrouped.
type group struct {
	r resolved
}

// regroupResource looks at the pids of the items of a resource without a
// pid of its own. When they all belong to one process the resource is
// enriched in place; otherwise each process's items move to a resource of
// their own (the original resource's attributes plus the context), in
// copies of their containers, and items without a context stay. It
// returns deferred when a pid is being read (nothing was changed or
// counted), and whether the resource lost every item (the caller removes
// it).
func (b *batch) regroupResource(attrs pcommon.Map, t itemTree) (deferred, emptied bool) {
	s := &b.regroup
	s.decisions, s.groups = s.decisions[:0], s.groups[:0]
	facts := b.c.factsOf(attrs)
	b.resetMemo()
	var counts [numOutcomes]int64
	moved, pending := 0, false
	for leaf := range t.leaves() {
		n := len(*t.items(leaf))
		for i := range n {
			g := int32(-1)
			if pid := t.pid(leaf, i); pid != 0 {
				r := b.resolveMemo(&facts, pid)
				switch {
				case r.outcome == outcomePending:
					pending = true
				case r.p != nil:
					if r.group < 0 {
						r.group = b.groupOf(r)
					}
					g = r.group
					moved++
				}
				if r.outcome != outcomePending {
					counts[r.outcome]++
				}
			}
			s.decisions = append(s.decisions, g)
		}
	}
	if pending {
		return true, false
	}
	for o, n := range counts {
		b.count[o] += n
	}
	switch {
	case moved == 0:
		return false, false
	case len(s.groups) == 1 && moved == len(s.decisions):
		// Every item is of one process: enrich in place.
		b.enrichGroup(attrs, &s.groups[0])
		return false, false
	}
	b.split(t)
	return false, moved == len(s.decisions)
}

// groupOf returns the group of a resolved pid's items: groups are keyed by
// host pid (a container pid and the host pid of one process are one group).
func (b *batch) groupOf(r *resolved) int32 {
	s := &b.regroup
	for i := range s.groups {
		if s.groups[i].r.host == r.host {
			return int32(i)
		}
	}
	s.groups = append(s.groups, group{r: *r})
	return int32(len(s.groups) - 1)
}

// enrichGroup enriches the resource of one process's group.
func (b *batch) enrichGroup(attrs pcommon.Map, g *group) {
	b.c.enrich(attrs, g.r.e, false)
	stampPids(attrs, g.r.e, g.r.host, g.r.host)
}

// split moves each group's items into its own resource.
func (b *batch) split(t itemTree) {
	s := &b.regroup
	for g := range s.groups {
		b.enrichGroup(t.newResource(g, s.groups[g].r.host), &s.groups[g])
	}
	s.counts = append(s.counts[:0], make([]int, len(s.groups))...)
	s.dst = append(s.dst[:0], make([]*[]unsafe.Pointer, len(s.groups))...)
	k := 0
	for leaf := range t.leaves() {
		items := t.items(leaf)
		decisions := s.decisions[k : k+len(*items)]
		k += len(*items)
		some := false
		for _, g := range decisions {
			if g >= 0 {
				s.counts[g]++
				some = true
			}
		}
		if !some {
			continue
		}
		for g, n := range s.counts {
			if n > 0 {
				s.dst[g] = t.openLeaf(g, leaf, n)
				s.counts[g] = 0
			}
		}
		kept, first := 0, -1
		for i, g := range decisions {
			p := (*items)[i]
			if g < 0 {
				(*items)[kept] = p
				kept++
				continue
			}
			if first < 0 {
				first = int(g)
			}
			*s.dst[g] = append(*s.dst[g], p)
		}
		clear((*items)[kept:])
		*items = (*items)[:kept]
		if kept == 0 {
			t.emptied(leaf, first)
		}
	}
	clear(s.dst)
	t.prune()
}

// marks flags containers (by index in their slice) emptied by regrouping.
type marks []bool

func (m *marks) set(i int) {
	for len(*m) <= i {
		*m = append(*m, false)
	}
	(*m)[i] = true
}

// removeMarked returns a RemoveIf predicate removing the marked elements:
// RemoveIf calls it once per element, in order.
func removeMarked[T any](m marks) func(T) bool {
	i := 0
	return func(T) bool {
		r := i < len(m) && m[i]
		i++
		return r
	}
}
